import { LETTERS, NUMBERS } from '../../words/vocab.ts';
import { Rng, mixSeed } from '../../util/random.ts';
import { drawHorizon } from '../horizon.ts';
import type { FogCourierKnobs } from './knobs.ts';

export const DIRECTIONS = ['north', 'east', 'south', 'west'] as const;
export type Direction = (typeof DIRECTIONS)[number];

export const OPPOSITE: Readonly<Record<Direction, Direction>> = {
  north: 'south',
  south: 'north',
  east: 'west',
  west: 'east',
};

export interface Room {
  id: number; // shown to the agent; random, so ids reveal nothing about the layout
  exits: Partial<Record<Direction, number>>; // direction -> room index
  items: string[];
}

/** One signpost of the way: leave room `id` by `dir`, or (the target) drop the item there. */
export interface Signpost {
  id: number;
  dir: Direction | 'drop';
}

/**
 * A route of rooms from the start (index 0) to the target, each route room with side rooms
 * (dead ends) behind its other exits, so every move is a real choice among `branching` exits
 * besides the way back. The instruction gives the way as signposts keyed by room id (`path 12
 * east , 17 north , … , 3 drop`): the clue seen at the start and needed at every later step, so
 * after a compaction the summary must carry the signposts still ahead (docs/tasks.md). Each
 * decision is a one-key lookup (room id in view -> signpost), the kind the embedded 2-layer model
 * learns; a depth-first search needs the whole search state at every step, which the base never
 * held (docs/decisions/0030).
 */
export interface FogCourierTask {
  rooms: Room[];
  route: number[]; // room indices from the start to the target
  way: Signpost[]; // one per move of the route, then the target's `drop`
  item: string; // the letter to deliver
  itemRoom: number; // index, on the route strictly between start and target
  target: number; // index of the room to deliver to (the route's end)
  budget: number; // steps
}

const FAMILY_SALT = 0x666f67;

export function generateFogCourier(seed: number, k: FogCourierKnobs): FogCourierTask {
  const rng = new Rng(mixSeed(FAMILY_SALT, seed));
  const ids = rng.shuffle(NUMBERS.map(Number));
  const rooms: Room[] = [];
  const addRoom = (): number => rooms.push({ id: ids[rooms.length]!, exits: {}, items: [] }) - 1;
  const connect = (from: number, d: Direction, to: number): void => {
    rooms[from]!.exits[d] = to;
    rooms[to]!.exits[OPPOSITE[d]] = from;
  };
  const free = (i: number): Direction[] => DIRECTIONS.filter((d) => rooms[i]!.exits[d] === undefined);
  // The length varies by one either way, so no step count tells where the target is.
  const route0 = drawHorizon({ salt: FAMILY_SALT, seed, min: k.minRoute, max: k.route });
  const moves = route0 - 1 + rng.int(3);
  const route = [addRoom()];
  const way: Signpost[] = [];
  for (let m = 0; m < moves; m++) {
    const from = route[route.length - 1]!;
    const d = rng.pick(free(from));
    const to = addRoom();
    connect(from, d, to);
    way.push({ id: rooms[from]!.id, dir: d });
    route.push(to);
  }
  // Side rooms after the route is laid, so the onward exit's direction is uniform over the four.
  for (const r of route) {
    for (let s = 0; s < k.branching - 1; s++) {
      const dirs = free(r);
      if (dirs.length === 0) break;
      connect(r, rng.pick(dirs), addRoom());
    }
  }
  const target = route[route.length - 1]!;
  way.push({ id: rooms[target]!.id, dir: 'drop' });
  const itemRoom = route[1 + rng.int(moves - 1)]!;
  const letters = rng.shuffle([...LETTERS]);
  const item = letters[0]!;
  rooms[itemRoom]!.items.push(item);
  // Distractor items lie in side rooms: on the way the only item is the one to take, so a `take`
  // is a copy, and a wrong turn shows what is not to be taken.
  const side = rooms.map((_, i) => i).filter((i) => !route.includes(i));
  if (side.length > 0)
    for (let i = 0; i < k.distractors; i++) rooms[rng.pick(side)]!.items.push(letters[1 + (i % 25)]!);
  for (const r of rooms) r.items.sort();
  const budget = Math.ceil((1 + k.slack) * (moves + 2)) + 1;
  return { rooms, route, way, item, itemRoom, target, budget };
}

/** `12 east , 17 north , … , 3 drop`: the signposts as clauses, each `room-id direction`. */
export const wayText = (way: readonly Signpost[]): string => way.map((s) => `${s.id} ${s.dir}`).join(' , ');

/** The task statement: `deliver item k to room 44 , then done . path 12 east , 17 north , …`. */
export const goalText = (task: FogCourierTask): string =>
  `deliver item ${task.item} to room ${task.rooms[task.target]!.id} , then done . path ${wayText(task.way)}`;

/** `room 12 exits north east items c f` (the items part only when there are items). */
export function roomView(r: Room): string {
  const exits = DIRECTIONS.filter((d) => r.exits[d] !== undefined).join(' ');
  return `room ${r.id} exits ${exits}${r.items.length > 0 ? ` items ${r.items.join(' ')}` : ''}`;
}

/** Exact verifier: at `done`, the item lies in the target room. */
export function verifyFogCourier(task: FogCourierTask, rooms: readonly Room[]): boolean {
  return rooms[task.target]!.items.includes(task.item);
}
