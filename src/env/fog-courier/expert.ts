import type { TextPolicy } from '../family.ts';
import type { SummaryContent } from '../summary-writers.ts';
import { isLetterWord, isNumberWord, readWindow, type VisibleWindow } from '../visible-window.ts';
import { DIRECTIONS, OPPOSITE, type Direction } from './generate.ts';

interface View {
  room: number;
  exits: Direction[];
  items: string[];
}

/** What the expert knows from the visible window alone (docs/tasks.md, fog-courier). */
export interface FogCourierState {
  goal: { item: string; room: number } | null;
  /** Step number the summary covers (`step n` in the head); null when no summary says so. */
  coveredStep: number | null;
  lastStep: number | null; // newest step number seen anywhere
  path: Direction[]; // from the start room to here
  back: Direction | null; // depth-first pointer: the child direction last returned from
  carry: boolean;
  targetPath: Direction[] | null; // from the start room to the target room, once seen
  delivered: boolean;
  view: View | null; // the current room as last shown
}

const isDir = (w: string | undefined): w is Direction => w !== undefined && (DIRECTIONS as readonly string[]).includes(w);

function dirsFrom(ws: readonly string[], i: number): Direction[] {
  const out: Direction[] = [];
  for (let j = i; isDir(ws[j]); j++) out.push(ws[j] as Direction);
  return out;
}

/** `room R exits d… [items x…]` anywhere in ws (the newest one wins). */
function findView(ws: readonly string[]): View | null {
  let v: View | null = null;
  for (let i = 0; i < ws.length; i++) {
    if (ws[i] === 'room' && isNumberWord(ws[i + 1]) && ws[i + 2] === 'exits') {
      const exits = dirsFrom(ws, i + 3);
      const items: string[] = [];
      if (ws[i + 3 + exits.length] === 'items') for (let j = i + 4 + exits.length; isLetterWord(ws[j]); j++) items.push(ws[j]!);
      v = { room: Number(ws[i + 1]), exits, items };
    }
  }
  return v;
}

const stepNumber = (ws: readonly string[]): number | null => (ws[0] === 'step' && isNumberWord(ws[1]) ? Number(ws[1]) : null);

/** Step numbers wrap at 64; a step is new if it lies less than half a lap after the covered one. */
const isNewer = (n: number, covered: number): boolean => ((n - covered + 64) % 64) >= 1 && ((n - covered + 64) % 64) < 32;

function readHead(ws: readonly string[], s: FogCourierState): void {
  let lastStepAt = 0;
  for (let i = 0; i < ws.length; i++) {
    const x = ws[i];
    const next = ws[i + 1];
    if (x === 'deliver' && ws[i + 1] === 'item' && isLetterWord(ws[i + 2]) && ws[i + 4] === 'room' && isNumberWord(ws[i + 5])) {
      s.goal = { item: ws[i + 2]!, room: Number(ws[i + 5]) };
    } else if (x === 'step' && isNumberWord(next)) {
      // The last `step` wins: with resume.includeTask the instruction's `step 0` precedes the summary's.
      s.coveredStep = Number(next);
      lastStepAt = i;
    }
    else if (x === 'path') s.path = dirsFrom(ws, i + 1);
    else if (x === 'back' && isDir(next)) s.back = next;
    else if (x === 'carry' && isLetterWord(next)) s.carry = true;
    else if (x === 'target' && isDir(next)) s.targetPath = dirsFrom(ws, i + 1);
    else if (x === 'drop' && isLetterWord(next)) s.delivered = true;
  }
  // A view counts only if shown after the covered step (the instruction's start room is stale
  // once a summary follows it).
  s.view = findView(ws.slice(lastStepAt));
  s.lastStep = s.coveredStep;
}

/**
 * Rebuilds the state: the head (instruction or summary), then only the steps newer than the step
 * the summary covers — tail steps repeated after a compaction are already in the summary, and
 * moves (unlike kv-ledger's writes) are not idempotent.
 */
export function readFogCourier(w: VisibleWindow): FogCourierState {
  const s: FogCourierState = {
    goal: null, coveredStep: null, lastStep: null, path: [], back: null, carry: false, targetPath: null, delivered: false, view: null,
  };
  readHead(w.head, s);
  for (const st of w.steps) {
    const obs = st.observation ?? [];
    const n = stepNumber(obs);
    if (n !== null) s.lastStep = n;
    const v = findView(obs);
    if (v) s.view = v;
    if (n === null || (s.coveredStep !== null && !isNewer(n, s.coveredStep))) continue;
    const [verb, arg] = st.action;
    if (verb === 'go' && isDir(arg) && v) {
      const up = s.path.length > 0 && arg === OPPOSITE[s.path[s.path.length - 1]!];
      if (up) s.back = s.path.pop()!;
      else {
        s.path.push(arg);
        s.back = null;
      }
      if (s.goal && v.room === s.goal.room) s.targetPath = [...s.path];
    } else if (verb === 'take' && obs.includes('carrying') && arg === s.goal?.item) s.carry = true;
    else if (verb === 'drop' && obs[obs.length - 1] === 'ok' && arg === s.goal?.item) {
      s.carry = false;
      if (s.view && s.view.room === s.goal.room) s.delivered = true;
    }
  }
  return s;
}

const isPrefix = (a: readonly string[], b: readonly string[]): boolean => a.length <= b.length && a.every((x, i) => b[i] === x);

/** Depth-first search in north-east-south-west order; then the shortest way along the tree. */
export function fogCourierAct(s: FogCourierState): string {
  if (!s.goal || s.delivered) return 'done';
  const v = s.view;
  if (!v) return 'look';
  if (s.carry && v.room === s.goal.room) return `drop ${s.goal.item}`;
  if (!s.carry && v.items.includes(s.goal.item)) return `take ${s.goal.item}`;
  // A route only while it leads somewhere (a lossy summary can leave path and target inconsistent).
  if (s.carry && s.targetPath && !(s.path.length === s.targetPath.length && isPrefix(s.targetPath, s.path))) {
    const t = s.targetPath;
    let common = 0;
    while (common < s.path.length && common < t.length && s.path[common] === t[common]) common++;
    if (s.path.length > common) return `go ${OPPOSITE[s.path[s.path.length - 1]!]}`;
    return `go ${t[s.path.length]}`;
  }
  const up = s.path.length > 0 ? OPPOSITE[s.path[s.path.length - 1]!] : null;
  const children = DIRECTIONS.filter((d) => v.exits.includes(d) && d !== up);
  const next = s.back === null ? children[0] : children.find((d) => DIRECTIONS.indexOf(d) > DIRECTIONS.indexOf(s.back!));
  if (next) return `go ${next}`;
  return up ? `go ${up}` : 'done';
}

/** The oracle's facts: goal, the covered step (meta), where we are, the search pointer, the target's way. */
export function fogCourierNeeded(w: VisibleWindow): SummaryContent {
  const s = readFogCourier(w);
  const facts = [`path ${s.path.join(' ')}`.trim()];
  if (s.back) facts.push(`back ${s.back}`);
  if (s.goal && s.carry) facts.push(`carry ${s.goal.item}`);
  if (s.targetPath) facts.push(`target ${s.targetPath.join(' ')}`);
  if (s.goal && s.delivered) facts.push(`drop ${s.goal.item}`);
  return {
    goal: s.goal ? [`deliver item ${s.goal.item} to room ${s.goal.room}`] : [],
    meta: s.lastStep !== null ? [`step ${s.lastStep}`] : [],
    facts,
  };
}

export const fogCourierExpert: TextPolicy = (messages) => {
  const w = readWindow(messages);
  if (w.summaryRequest) {
    const c = fogCourierNeeded(w);
    return [...c.goal, ...c.meta, ...c.facts].join(' , ');
  }
  return fogCourierAct(readFogCourier(w));
};
