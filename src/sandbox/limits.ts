import { z } from 'zod';

/**
 * Resource limits of one sandbox (docs/sandbox.md says how each is enforced). The rlimits are set
 * with bash's `ulimit` in the sandbox's first process, before anything else runs, so every
 * process inside inherits them and none can raise them (hard limits). No cgroups: they need
 * privileges this tool does not assume.
 */
export const SandboxLimitsSchema = z
  .object({
    /** RLIMIT_CPU: CPU seconds per process (SIGXCPU, then SIGKILL). */
    cpuSeconds: z.number().int().min(1).default(600),
    /** RLIMIT_AS: address space per process, MiB (allocations beyond it fail). */
    memoryMb: z.number().int().min(32).default(2048),
    /** RLIMIT_NPROC: processes at once in the sandbox's own user namespace, its 3 helper processes included. */
    processes: z.number().int().min(8).default(256),
    /** RLIMIT_FSIZE: largest file a process may write, MiB (SIGXFSZ beyond it). */
    fileSizeMb: z.number().int().min(1).default(1024),
    /**
     * Total MiB the sandbox may write to its disk (storage-cap.ts): measured every 2 s and after
     * each command; over it, the sandbox is frozen and the episode ends as the agent's failure.
     * Unset: only fileSizeMb bounds what is written.
     */
    storageMb: z.number().int().min(1).optional(),
    /** RLIMIT_NOFILE: open files per process. */
    openFiles: z.number().int().min(32).default(1024),
    /** Size of the in-memory /tmp and /dev/shm, MiB each. */
    tmpMb: z.number().int().min(1).default(512),
    /** Wall time per command, seconds: then everything the command started is killed. */
    commandTimeoutSec: z.number().positive().default(60),
    /** Output kept per command, bytes: longer output keeps its head and tail around a marker. */
    outputBytes: z.number().int().min(256).default(16_384),
    /**
     * A command that prints more than this many bytes in all is killed (output without end), bytes.
     * Unset by default: output never changes what a command does (its head and tail are kept in
     * bounded memory and it runs to its end or its timeout), as in Harbor.
     */
    outputKillBytes: z.number().int().min(1024).optional(),
  })
  .strict();

export type SandboxLimits = z.infer<typeof SandboxLimitsSchema>;
export type SandboxLimitsInput = z.input<typeof SandboxLimitsSchema>;
