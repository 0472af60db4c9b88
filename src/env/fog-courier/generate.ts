import { LETTERS, NUMBERS } from '../../model/vocab.ts';
import { Rng, mixSeed } from '../../util/random.ts';
import type { FogCourierKnobs } from './knobs.ts';

export const DIRECTIONS = ['north', 'east', 'south', 'west'] as const;
export type Direction = (typeof DIRECTIONS)[number];

export const OPPOSITE: Readonly<Record<Direction, Direction>> = { north: 'south', south: 'north', east: 'west', west: 'east' };

export interface Room {
  id: number; // shown to the agent; random, so ids reveal nothing about the layout
  exits: Partial<Record<Direction, number>>; // direction -> room index
  parent: number | null; // room index
  depth: number;
  items: string[];
}

/**
 * A tree of rooms rooted at the start room (index 0): every exit but the way back leads to a new
 * room, so a depth-first search with a fixed exit order finds everything, and its whole state is
 * the path from the start plus the last child it came back from (fog-courier/expert.ts).
 */
export interface FogCourierTask {
  rooms: Room[];
  item: string; // the letter to deliver
  itemRoom: number; // index
  target: number; // index of the room to deliver to
  budget: number; // steps
}

const FAMILY_SALT = 0x666f67;

export function generateFogCourier(seed: number, k: FogCourierKnobs): FogCourierTask {
  const rng = new Rng(mixSeed(FAMILY_SALT, seed));
  const ids = rng.shuffle(NUMBERS.map(Number)).slice(0, k.rooms);
  const rooms: Room[] = [{ id: ids[0]!, exits: {}, parent: null, depth: 0, items: [] }];
  const freeDirs = (r: Room): Direction[] => DIRECTIONS.filter((d) => r.exits[d] === undefined);
  const children = (r: Room): number => Object.keys(r.exits).length - (r.parent === null ? 0 : 1);
  while (rooms.length < k.rooms) {
    const open = rooms.filter((r) => r.depth < k.maxDepth && children(r) < k.branching && freeDirs(r).length > 0);
    // With branching 1 and a shallow cap the tree can run out of slots: allow a wider start room.
    const pool = open.length > 0 ? open : [rooms[0]!];
    const parent = rng.pick(pool);
    const d = rng.pick(freeDirs(parent));
    const child: Room = { id: ids[rooms.length]!, exits: { [OPPOSITE[d]]: rooms.indexOf(parent) }, parent: rooms.indexOf(parent), depth: parent.depth + 1, items: [] };
    parent.exits[d] = rooms.length;
    rooms.push(child);
    if (freeDirs(rooms[0]!).length === 0 && open.length === 0) break;
  }
  // Target is met earlier than the item in depth-first order (north, east, south, west), so the
  // way to it is a clue seen early and needed late (issue 5).
  const order = preorder(rooms);
  const [a, b] = rng.shuffle(order.slice(1)).slice(0, 2) as [number, number];
  const [target, itemRoom] = order.indexOf(a) < order.indexOf(b) ? [a, b] : [b, a];
  const letters = rng.shuffle([...LETTERS]);
  const item = letters[0]!;
  rooms[itemRoom]!.items.push(item);
  for (let i = 0; i < k.distractors; i++) rooms[rng.int(rooms.length)]!.items.push(letters[1 + (i % 25)]!);
  for (const r of rooms) r.items.sort();
  const maxDepth = Math.max(...rooms.map((r) => r.depth));
  const budget = Math.ceil((1 + k.slack) * (2 * (rooms.length - 1) + 2 * maxDepth + 4));
  return { rooms, item, itemRoom, target, budget };
}

export function preorder(rooms: readonly Room[]): number[] {
  const out: number[] = [];
  const visit = (i: number): void => {
    out.push(i);
    const r = rooms[i]!;
    for (const d of DIRECTIONS) {
      const j = r.exits[d];
      if (j !== undefined && j !== r.parent) visit(j);
    }
  };
  visit(0);
  return out;
}

/** `room 12 exits north east items c f` (the items part only when there are items). */
export function roomView(r: Room): string {
  const exits = DIRECTIONS.filter((d) => r.exits[d] !== undefined).join(' ');
  return `room ${r.id} exits ${exits}${r.items.length > 0 ? ` items ${r.items.join(' ')}` : ''}`;
}

/** Exact verifier: at `done`, the item lies in the target room. */
export function verifyFogCourier(task: FogCourierTask, rooms: readonly Room[]): boolean {
  return rooms[task.target]!.items.includes(task.item);
}
