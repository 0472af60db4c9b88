import type { DensePart } from '../family.ts';
import type { Rng } from '../../util/random.ts';
import { DIRECTIONS, generateFogCourier, roomView } from './generate.ts';
import type { FogCourierKnobs } from './knobs.ts';

/**
 * Dense warm-up text for fog-courier (docs/sft.md, "fog-courier decision probes"): the goal, then
 * `probes` steps, each a room view read as an observation and a supervised reply, in the chat
 * layout of an episode. What the base got wrong with oracle summaries was not the search but the
 * two lookups around it: it took the goal letter in any room that had items (`items z` → `take g`,
 * then `item not here` for the rest of the budget) and walked through the target room while
 * carrying. Episodes give one take and one drop each; these probes give ~probes per sequence:
 *   not carrying, goal item in the room      → `take g` (supervised)
 *   carrying, the room id is the target id   → `drop g` (supervised), `ok` → `done`
 *   otherwise                                → `go` (only the verb: the direction depends on the
 *                                              depth-first state, which a probe does not have)
 * Views are the rooms of a real generated task (its exits, items and ids); the walk between them
 * is not a real walk, which is why directions stay unsupervised. One in eight `go` steps is replaced
 * by a wrong `take` (read, not supervised) answered `item not here`, followed by a supervised `go`:
 * the recovery the base never saw (an expert never errs) and looped on.
 */
export function fogCourierDense(options: { rng: Rng; knobs: FogCourierKnobs; probes: number }): DensePart[] {
  const { rng } = options;
  const task = generateFogCourier(rng.int(1_000_000), options.knobs);
  const item = task.item;
  const targetId = task.rooms[task.target]!.id;
  const parts: DensePart[] = [{ kind: 'instruction', text: `deliver item ${item} to room ${targetId} , then done . step 0 : ${roomView(task.rooms[0]!)}` }];
  let step = 0;
  const obs = (body: string): void => {
    step = (step + 1) % 64;
    parts.push({ kind: 'observation', text: `step ${step} : ${body}` });
  };
  const go = (exits: readonly string[]): DensePart => ({ kind: 'reply', text: `go ${rng.pick(exits)}`, words: 1 });
  const exitsOf = (i: number): string[] => DIRECTIONS.filter((d) => task.rooms[i]!.exits[d] !== undefined);
  parts.push(go(exitsOf(0)));
  let carrying = false;
  const others = task.rooms.map((_, i) => i).filter((i) => i !== task.target && i !== task.itemRoom);
  for (let p = 0; p < options.probes; p++) {
    // The room that decides, half the time; the item's room shows the item only until taken.
    const decisive = carrying ? task.target : task.itemRoom;
    const at = rng.next() < 0.5 ? decisive : rng.pick(rng.next() < 0.5 || others.length === 0 ? [carrying ? task.itemRoom : task.target] : others);
    const room = task.rooms[at]!;
    const shown = carrying && at === task.itemRoom ? { ...room, items: room.items.filter((x) => x !== item) } : room;
    obs(roomView(shown));
    if (!carrying && at === task.itemRoom) {
      parts.push({ kind: 'reply', text: `take ${item}` });
      carrying = true;
      obs(`ok , carrying ${item}`);
      parts.push(go(exitsOf(at)));
    } else if (carrying && at === task.target) {
      parts.push({ kind: 'reply', text: `drop ${item}` });
      obs('ok');
      parts.push({ kind: 'reply', text: 'done' });
      break;
    } else if (rng.next() < 0.125) {
      parts.push({ kind: 'action', text: `take ${item}` });
      obs('item not here');
      parts.push(go(exitsOf(at)));
    } else parts.push(go(exitsOf(at)));
  }
  return parts;
}
