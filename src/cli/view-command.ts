import type { Command } from 'commander';
import { bundleStatus } from '../view/bundle.ts';
import { startViewServer } from '../view/server.ts';
import { openSources, ViewInputError } from '../view/sources.ts';
import { CliError } from './errors.ts';

export const DEFAULT_VIEW_PORT = 7601;

export function registerViewCommand(program: Command): void {
  program
    .command('view')
    .description(
      'browse runs in a local web app (127.0.0.1 only): training curves compared by system and seed, following runs still training; episodes as windows and summaries, per-token credit',
    )
    .argument(
      '<runs...>',
      'run directories (crl train), crl reproduce directories, a directory holding those (runs/), or episode JSONL files (crl run --out)',
    )
    .option('--port <p>', `port on 127.0.0.1 (0: any free port)`, String(DEFAULT_VIEW_PORT))
    .action(async (runs: string[], opts: { port: string }) => {
      const port = Number(opts.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new CliError(`--port must be an integer from 0 to 65535, got ${JSON.stringify(opts.port)}`);
      try {
        openSources(runs); // bad inputs first: they are the user's to fix
      } catch (e) {
        if (e instanceof ViewInputError) throw new CliError(e.message);
        throw e;
      }
      const status = bundleStatus();
      if (status === 'missing')
        throw new CliError(
          "the viewer's web app is not built: run `npm run build:viewer` (npm install does it; it needs the dev dependencies)",
        );
      if (status === 'stale')
        process.stderr.write('crl: warning: the viewer bundle is older than its sources; run `npm run build:viewer`\n');
      let view;
      try {
        view = await startViewServer({ inputs: runs, port });
      } catch (e) {
        if (e instanceof ViewInputError) throw new CliError(e.message);
        if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE')
          throw new CliError(`port ${port} on 127.0.0.1 is in use; choose another with --port (0 picks a free one)`);
        throw e;
      }
      process.stderr.write(
        `crl view: ${view.sources.length} source(s) at ${view.url} (listening on 127.0.0.1 only; Ctrl-C to stop)\n`,
      );
      process.stdout.write(`${JSON.stringify({ url: view.url, sources: view.sources.length })}\n`);
      await new Promise<void>((resolve) => {
        const stop = () => void view.close().then(resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
