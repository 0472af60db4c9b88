import type { Slip } from '../family.ts';
import type { TextPolicy } from '../../contracts/index.ts';
import type { SummaryContent } from '../summary-content.ts';
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
  /** Signposts in view, in the order first seen: room id -> direction to leave it by, or `drop`. */
  way: Map<number, Direction | 'drop'>;
  view: View | null; // the current room as last shown
  /** The last step, if any: its action words and observation words. */
  last: { action: string[]; observation: string[] } | null;
  /** A `go` into the current room, if the steps in view show it (for the way back). */
  cameBy: Direction | null;
  delivered: boolean;
}

const isDir = (w: string | undefined): w is Direction =>
  w !== undefined && (DIRECTIONS as readonly string[]).includes(w);

/** `room R exits d… [items x…]` anywhere in ws (the newest one wins). */
function findView(ws: readonly string[]): View | null {
  let v: View | null = null;
  for (let i = 0; i < ws.length; i++) {
    if (ws[i] === 'room' && isNumberWord(ws[i + 1]) && ws[i + 2] === 'exits') {
      const exits: Direction[] = [];
      let j = i + 3;
      for (; isDir(ws[j]); j++) exits.push(ws[j] as Direction);
      const items: string[] = [];
      if (ws[j] === 'items') for (j++; isLetterWord(ws[j]); j++) items.push(ws[j]!);
      v = { room: Number(ws[i + 1]), exits, items };
    }
  }
  return v;
}

/**
 * Rebuilds the state. Signposts are `<room id> <direction>` pairs anywhere in the head (the
 * instruction's `path …` or a summary's clauses); where we are is the newest room view. Nothing
 * depends on counting moves, so tail steps repeated after a compaction change nothing.
 */
export function readFogCourier(w: VisibleWindow): FogCourierState {
  const s: FogCourierState = { goal: null, way: new Map(), view: null, last: null, cameBy: null, delivered: false };
  const h = w.head;
  for (let i = 0; i < h.length; i++) {
    if (
      h[i] === 'deliver' &&
      h[i + 1] === 'item' &&
      isLetterWord(h[i + 2]) &&
      h[i + 4] === 'room' &&
      isNumberWord(h[i + 5])
    ) {
      s.goal = { item: h[i + 2]!, room: Number(h[i + 5]) };
    } else if (
      isNumberWord(h[i]) &&
      (isDir(h[i + 1]) || h[i + 1] === 'drop') &&
      h[i - 1] !== 'room' &&
      !s.way.has(Number(h[i]))
    ) {
      s.way.set(Number(h[i]), h[i + 1] as Direction | 'drop');
    } else if (h[i] === 'drop' && isLetterWord(h[i + 1])) s.delivered = true; // a summary's `drop k`
  }
  s.view = findView(h);
  for (const st of w.steps) {
    const obs = st.observation ?? [];
    const v = findView(obs);
    if (v) {
      s.view = v;
      s.cameBy = st.action[0] === 'go' && isDir(st.action[1]) ? st.action[1] : null;
    }
    if (
      st.action[0] === 'drop' &&
      st.action[1] === s.goal?.item &&
      obs[obs.length - 1] === 'ok' &&
      s.view?.room === s.goal!.room
    )
      s.delivered = true;
    s.last = { action: st.action, observation: obs };
  }
  return s;
}

/**
 * Follow the signposts: take the item where it lies, drop it where the signpost says `drop` (the
 * target room), then done. Off
 * the known way (a side room, or a signpost a lossy summary dropped): out of a dead end by the way
 * back, otherwise the first exit that is not the way back.
 */
export function fogCourierAct(s: FogCourierState): string {
  if (!s.goal || s.delivered) return 'done';
  const v = s.view;
  if (!v) return 'look';
  const { item, room } = s.goal;
  const last = s.last;
  const sign = s.way.get(v.room);
  if (v.room === room || sign === 'drop') return last?.action.join(' ') === `drop ${item}` ? 'done' : `drop ${item}`;
  const justTook = last !== null && last.action.join(' ') === `take ${item}`;
  if (v.items.includes(item) && !justTook) return `take ${item}`;
  if (sign && v.exits.includes(sign)) return `go ${sign}`;
  const back = s.cameBy ? OPPOSITE[s.cameBy] : null;
  const onward = v.exits.find((d) => d !== back);
  return `go ${onward ?? back ?? v.exits[0] ?? 'north'}`;
}

/**
 * The oracle's facts: the goal, and the signposts still ahead (from the room in view on, in
 * route order). Passed signposts are dropped: they are not needed again. Off the way, all are kept.
 */
export function fogCourierNeeded(w: VisibleWindow): SummaryContent {
  const s = readFogCourier(w);
  if (!s.goal) return { goal: [], meta: [], facts: [] };
  const signs = [...s.way];
  const at = s.view ? signs.findIndex(([id]) => id === s.view!.room) : -1;
  const ahead = s.delivered || s.view?.room === s.goal.room ? [] : signs.slice(Math.max(0, at));
  const facts = ahead.map(([id, d]) => `${id} ${d}`);
  if (s.delivered) facts.push(`drop ${s.goal.item}`);
  return { goal: [`deliver item ${s.goal.item} to room ${s.goal.room}`], meta: [], facts };
}

export const fogCourierExpert: TextPolicy = (messages) => {
  const w = readWindow(messages);
  if (w.summaryRequest) {
    const c = fogCourierNeeded(w);
    return [...c.goal, ...c.meta, ...c.facts].join(' , ');
  }
  return fogCourierAct(readFogCourier(w));
};

/** The demonstrator's slip (src/env/slip.ts): `done` where the expert drops the item, so it is never delivered. */
export const fogCourierSlip: Slip = (action) => (action.startsWith('drop ') ? 'done' : undefined);
