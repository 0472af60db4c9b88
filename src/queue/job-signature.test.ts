import { describe, expect, it } from 'vitest';
import {
  jobSignatureProblem,
  queueSecretFromEnv,
  resultSignatureProblem,
  signJob,
  signResult,
} from './job-signature.ts';

const message = {
  run: 'r1',
  session: 's1',
  job: {
    episodeId: 'it1-ep0',
    env: { kind: 'harbor', taskDir: '/srv/tasks/one', exposeSolution: false, sandbox: 'bwrap' },
    seed: 3,
    policyVersion: 0,
  },
  tokenizer: { name: 'qwen3', sha256: 'abc' },
  rollout: { contextWindow: 1024 },
  sampler: { kind: 'engines', urls: ['http://10.0.0.1:30000'], protocol: 'sglang', weightVersion: '0' },
  stepDelayMs: 0,
};

/** The job as a worker reads it from Redis: JSON, with the signature beside the fields. */
const signed = (secret: string, m: object = message) =>
  JSON.parse(JSON.stringify({ ...m, signature: signJob(m, secret) })) as Record<string, unknown>;

describe('job signatures', () => {
  it('the right secret verifies, whatever order the fields arrive in', () => {
    expect(jobSignatureProblem(signed('a'), 'a')).toBeNull();
    const { signature, ...rest } = signed('a');
    const reordered = Object.fromEntries(Object.entries(rest).reverse());
    expect(jobSignatureProblem({ signature, ...reordered }, 'a')).toBeNull();
  });

  it('another secret, no signature, or a signature the worker cannot check is refused', () => {
    expect(jobSignatureProblem(signed('a'), 'b')).toMatch(/does not match this worker's CRL_QUEUE_SECRET/);
    expect(jobSignatureProblem(message, 'b')).toMatch(/not signed/);
    expect(jobSignatureProblem({ ...message, signature: 7 }, 'a')).toMatch(/not a string/);
    expect(jobSignatureProblem(signed('a'), null)).toMatch(/signed, but this worker has no CRL_QUEUE_SECRET/);
    expect(jobSignatureProblem(message, null)).toBeNull();
  });

  it('any field changed, added or removed after signing is refused', () => {
    /** The fields a change below touches, as the worker reads them from JSON. */
    interface Read {
      job: { env: { taskDir: string; exposeSolution: boolean }; seed: number };
      sampler: { urls: string[] };
      rollout: { contextWindow: number };
      session: string;
      extra?: number;
      stepDelayMs?: number;
    }
    const tampered: ((m: Read) => void)[] = [
      (m) => (m.job.env.taskDir = '/etc'),
      (m) => (m.job.env.exposeSolution = true),
      (m) => (m.job.seed = 4),
      (m) => (m.sampler.urls = ['http://attacker:1']),
      (m) => (m.rollout.contextWindow = 1025),
      (m) => (m.session = 's2'),
      (m) => (m.extra = 1),
      (m) => delete m.stepDelayMs,
    ];
    for (const change of tampered) {
      const m = signed('a');
      change(m as unknown as Read);
      expect(jobSignatureProblem(m, 'a'), change.toString()).toMatch(/changed after signing/);
    }
  });

  it('a result verifies only for its own job, with the same secret', () => {
    const r = { jobId: 'r1.s1.it1-ep0', record: { episodeId: 'it1-ep0', reward: 0 }, runMs: 12.5 };
    const signature = signResult(r, 'a');
    expect(resultSignatureProblem({ ...r, signature, secret: 'a' })).toBeNull();
    expect(resultSignatureProblem({ ...r, signature, secret: 'b' })).toMatch(/not signed with the trainer's/);
    expect(resultSignatureProblem({ ...r, jobId: 'r1.s1.it1-ep1', signature, secret: 'a' })).not.toBeNull();
    expect(resultSignatureProblem({ ...r, record: { ...r.record, reward: 1 }, signature, secret: 'a' })).not.toBeNull();
    expect(resultSignatureProblem({ ...r, signature: undefined, secret: 'a' })).toMatch(/not signed/);
    expect(resultSignatureProblem({ ...r, signature: undefined, secret: null })).toBeNull();
    // A job's signature never passes for a result's (each is labelled with what it signs).
    expect(resultSignatureProblem({ ...r, signature: signJob(r, 'a'), secret: 'a' })).not.toBeNull();
  });

  it('an empty CRL_QUEUE_SECRET counts as unset', () => {
    expect(queueSecretFromEnv({ CRL_QUEUE_SECRET: '' })).toBeNull();
    expect(queueSecretFromEnv({})).toBeNull();
    expect(queueSecretFromEnv({ CRL_QUEUE_SECRET: 'x' })).toBe('x');
  });
});
