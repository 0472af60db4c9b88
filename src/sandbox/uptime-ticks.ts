import { readFileSync } from 'node:fs';

/**
 * The kernel's uptime in hundredths of a second, read as the sandbox's supervisor reads it
 * (shell-script.ts now_ticks: the digits of /proc/uptime's first field without its point), which
 * is also the unit of a process's start time in /proc/PID/stat. A sandbox on this kernel (bubblewrap,
 * a local Docker daemon) shares the clock, so a tick taken here names the same instant there.
 */
export function uptimeTicks(): number {
  const up = readFileSync('/proc/uptime', 'utf8').split(' ')[0]!;
  const [whole, frac = '0'] = up.split('.');
  return Number(whole) * 100 + Number(frac.padEnd(2, '0').slice(0, 2));
}
