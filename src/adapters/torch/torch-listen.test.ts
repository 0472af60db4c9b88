import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { modelConfig } from '../../model/network/config.ts';
import { PolicyModel } from '../../model/network/policy.ts';
import { randomSequences, scrambleWeights } from '../../model/network/test-helpers.ts';
import { DEFAULT_OPTIMIZER } from '../../optim/config.ts';
import { Rng } from '../../util/random.ts';
import { waitFor } from '../../util/testing/wait-for.ts';
import { torchAvailable } from '../testing/torch-available.ts';
import { listeningTrainer } from '../testing/torch-listen.ts';
import { TorchTrainer, TorchTrainerError } from './torch-trainer.ts';

/**
 * A trainer started separately (`python3 -m crl_torch --listen`, as on a GPU machine) and reached
 * over TCP with the pipe's framing: it trains as the embedded engine does, serves one client after
 * another (a resumed run reconnects), and a server that goes away is an error naming its address.
 */
const run = torchAvailable('torch trainer over TCP') ? describe : describe.skip;

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

run('TorchTrainer over TCP (--trainer-url)', () => {
  const children: ChildProcess[] = [];
  const clients: TorchTrainer[] = [];
  afterAll(async () => {
    for (const c of clients) await c.close();
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await waitFor(() => children.every((c) => c.exitCode !== null || c.signalCode !== null), {
      what: 'the listening trainers to exit',
    });
  });

  it('trains as the embedded engine does, serves a second client, and names its address when gone', async () => {
    const { child, port } = await listeningTrainer(children);
    const url = `tcp://127.0.0.1:${port}`;
    const cfg = modelConfig('tiny');
    const policy = new PolicyModel({ config: cfg, optim: DEFAULT_OPTIMIZER, rng: new Rng(1) });
    scrambleWeights(policy.net, 2);
    const seqs = randomSequences({ rng: new Rng(3), lengths: [5, 9, 2], cfg });
    const grads = seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : 0.3)));

    const first = TorchTrainer.start({ url, timeoutMs: 120_000 });
    clients.push(first);
    expect(first.info.torch).not.toBe('');
    first.init({ policy, critic: null });
    const remote = first.policy.forward(seqs, { train: true });
    const local = policy.forward(seqs, { train: true });
    remote.logprobs.forEach((lp, i) =>
      lp.forEach((x, t) => expect(Math.abs(x - local.logprobs[i]![t]!)).toBeLessThan(1e-5)),
    );
    first.policy.backward({ logprobs: grads });
    policy.backward({ logprobs: grads });
    const a = first.policy.step();
    const b = policy.step();
    expect(Math.abs(a.gradNorm - b.gradNorm) / b.gradNorm).toBeLessThan(1e-6);
    const timing = first.takeTiming();
    expect(timing.requests).toBeGreaterThan(0);
    expect(timing.computeS).toBeGreaterThan(0);
    await first.close(); // ends this client; the server keeps listening

    const second = TorchTrainer.start({ url, timeoutMs: 120_000 });
    clients.push(second);
    second.init({ policy, critic: null });
    expect(second.policy.forward(seqs).logprobs.map((l) => l.length)).toEqual([5, 9, 2]);

    child.kill('SIGKILL');
    await waitFor(() => child.signalCode !== null, { what: 'the server to die' });
    const gone = errorOf(() => second.policy.forward(seqs));
    expect(gone).toBeInstanceOf(TorchTrainerError);
    expect(gone.message).toBe(`the torch trainer at ${url} closed the connection during forward`);

    const refused = errorOf(() => TorchTrainer.start({ url, timeoutMs: 30_000 }));
    expect(refused).toBeInstanceOf(TorchTrainerError);
    expect(refused.message).toMatch(
      new RegExp(`^the torch trainer at ${url} could not be reached: connect ECONNREFUSED .* during hello$`),
    );
  }, 300_000);

  it('refuses an address that is not tcp://HOST:PORT', () => {
    expect(() => TorchTrainer.start({ url: 'http://127.0.0.1:80' })).toThrow(
      /^the trainer URL http:\/\/127\.0\.0\.1:80 is not tcp:\/\/HOST:PORT$/,
    );
  });
});
