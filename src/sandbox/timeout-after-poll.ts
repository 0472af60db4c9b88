/**
 * setTimeout whose callback runs only after node has read its pipes once more. After a pause of
 * this process (SIGSTOP, a suspended VM) node runs expired timers before the poll phase that reads
 * the pipes, where the sandbox's answer may already wait; setImmediate runs after that phase, so a
 * callback that checks whether the answer came sees it (paused-trainer.test.ts). clearTimeout
 * cancels it until the deadline; after that the callback still runs, and must check for itself.
 */
export function timeoutAfterPoll(f: () => void, ms: number): NodeJS.Timeout {
  return setTimeout(() => setImmediate(f), ms);
}
