import { DenseChat } from '../dense-chat.ts';
import type { DensePart } from '../family.ts';
import type { Rng } from '../../util/random.ts';
import { FogCourierEnv } from './env.ts';
import { fogCourierExpert } from './expert.ts';
import { DIRECTIONS, goalText, generateFogCourier, roomView, type Direction } from './generate.ts';
import type { FogCourierKnobs } from './knobs.ts';

/**
 * Dense warm-up text for fog-courier (docs/sft.md). Every supervised reply is the scripted
 * expert's own decision on the chat so far, so the forms cannot disagree with it.
 *
 * Lookup form (1 - summaryShare of the sequences): one real task's instruction (goal and
 * signposts), then `probes` room views of that task in shuffled order, each entered by its real
 * way in, each answered by the expert: `go <signpost>` on the way, `take k` where the item lies,
 * the way back out of a side room; the target last (`drop k`, `ok`, `done`). An episode gives ~7
 * signpost lookups; this gives one per probe.
 *
 * Walk form (summaryShare): a real episode played by the expert with one wrong turn in six
 * (read, not supervised; the recovery is supervised), cut by a summary request at a random step
 * and answered by the oracle summary (the signposts still ahead).
 */
export function fogCourierDense(options: {
  rng: Rng;
  knobs: FogCourierKnobs;
  probes: number;
  summaryShare: number;
}): DensePart[] {
  return options.rng.next() < options.summaryShare ? walkForm(options) : lookupForm(options);
}

function lookupForm(options: { rng: Rng; knobs: FogCourierKnobs; probes: number }): DensePart[] {
  const { rng } = options;
  const task = generateFogCourier(rng.int(1_000_000), options.knobs);
  const chat = new DenseChat(fogCourierExpert, rng, `${goalText(task)} . ${roomView(task.rooms[0]!)}`);
  // How each room is entered: the route's signposts, or from its route room into a side room.
  const cameBy = new Map<number, Direction>();
  task.route.forEach((r, i) => {
    if (i > 0) cameBy.set(r, task.way[i - 1]!.dir as Direction); // a move: only the last signpost is `drop`
    for (const d of DIRECTIONS) {
      const j = task.rooms[r]!.exits[d];
      if (j !== undefined && !task.route.includes(j)) cameBy.set(j, d);
    }
  });
  const rooms = task.rooms.map((_, i) => i).filter((i) => i !== task.target);
  let taken = false;
  for (let p = 0; p < options.probes; p++) {
    const at = rng.pick(rooms);
    const d = cameBy.get(at);
    chat.act(d ? `go ${d}` : 'look', false);
    const room = task.rooms[at]!;
    chat.observe(
      roomView(taken && at === task.itemRoom ? { ...room, items: room.items.filter((x) => x !== task.item) } : room),
    );
    const reply = chat.reply();
    if (reply === `take ${task.item}`) {
      taken = true;
      chat.observe(`ok , carrying ${task.item}`);
      chat.reply(); // the signpost out of the item's room
    }
  }
  chat.act(`go ${task.way[task.way.length - 2]!.dir}`, false);
  chat.observe(roomView(task.rooms[task.target]!));
  if (chat.reply().startsWith('drop')) {
    chat.observe('ok');
    chat.reply();
  }
  return chat.parts;
}

function walkForm(options: { rng: Rng; knobs: FogCourierKnobs }): DensePart[] {
  const { rng } = options;
  const env = new FogCourierEnv(options.knobs);
  const chat = new DenseChat(fogCourierExpert, rng, env.reset(rng.int(1_000_000)).instruction);
  const cut = 1 + rng.int(options.knobs.route + 3);
  for (let step = 0; step < cut; step++) {
    let action = chat.decide();
    const [verb, dir] = action.split(' ');
    // A wrong turn: any other exit of this room, the way back included.
    const exits = DIRECTIONS.filter((d) => env.here.exits[d] !== undefined && d !== dir);
    if (verb === 'go' && rng.next() < 1 / 6 && exits.length > 0) {
      action = `go ${rng.pick(exits)}`;
      chat.act(action, false);
    } else chat.act(action, true);
    const out = env.step(action);
    if (out.done) return chat.parts;
    chat.observe(out.observation);
  }
  chat.summary();
  return chat.parts;
}
