import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { SETUP_SCRIPT } from './load-tasks.ts';

/**
 * The build files that let a container runtime (Harbor, `crl run --sandbox docker`) run a task
 * folder whose environment/ is a plain directory tree: a Dockerfile that starts FROM an image
 * holding the task's tools and copies each entry of environment/ to /app (the workspace the
 * instruction names), and an environment/setup.sh that keeps the folder runnable on bubblewrap (a
 * folder with a Dockerfile and no setup.sh is refused there: load-tasks.ts). The Dockerfile copies
 * entry by entry, rather than `COPY . /app`, so the build files never reach the agent's workspace,
 * exactly as bwrap leaves them out.
 */

/**
 * A Docker image reference (`[host[:port]/]name[:tag][@sha256:digest]`), narrow enough that it
 * can be written into a Dockerfile's FROM line without quoting: no spaces, newlines or flags.
 */
export const ImageRefSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9._-]*(:[0-9]+)?(\/[a-z0-9][a-z0-9._-]*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$/,
    'not a Docker image reference (name[:tag], lower-case, e.g. python:3.11-slim)',
  );

/** The workspace the task folders' instructions name (as harbor-env.ts's WORKDIR). */
const WORKSPACE = '/app';

/** environment/Dockerfile for these entries of environment/ (sorted: the same folder, the same text). */
export function dockerfileText(image: string, entries: readonly string[]): string {
  const from = ImageRefSchema.parse(image);
  return [
    `# The starting state for container runtimes: ${from} must provide the task's tools.`,
    '# environment/setup.sh stands in for this file on the bubblewrap sandbox.',
    `FROM ${from}`,
    `WORKDIR ${WORKSPACE}`,
    ...[...entries].sort().map((e) => `COPY ${JSON.stringify([e, `${WORKSPACE}/${e}`])}`),
    '',
  ].join('\n');
}

/** environment/setup.sh: on bubblewrap the host's read-only system directories stand in for the image. */
export const SETUP_TEXT = [
  '#!/bin/bash',
  '# On the bubblewrap sandbox the host provides the tools the Dockerfile image would: nothing to install.',
  'true',
  '',
].join('\n');

/**
 * Adds environment/Dockerfile (FROM `image`) and environment/setup.sh to a written task folder.
 * Refuses a folder that already has either, or whose environment/ is empty.
 */
export function addContainerFiles(taskDir: string, image: string): void {
  const env = join(taskDir, 'environment');
  const entries = existsSync(env) ? readdirSync(env) : [];
  for (const f of ['Dockerfile', SETUP_SCRIPT]) {
    if (entries.includes(f)) throw new Error(`${env} already has ${f}`);
  }
  if (entries.length === 0) throw new Error(`${env} is empty: nothing to copy into an image`);
  writeFileSync(join(env, 'Dockerfile'), dockerfileText(image, entries));
  writeFileSync(join(env, SETUP_SCRIPT), SETUP_TEXT, { mode: 0o755 });
}
