import type { Environment, EnvReset, EnvStep } from '../../contracts/index.ts';
import { parseKnobs } from '../knobs.ts';
import { words } from '../visible-window.ts';
import { fogCourierKnobs, type FogCourierKnobs } from './knobs.ts';
import {
  DIRECTIONS,
  generateFogCourier,
  goalText,
  roomView,
  verifyFogCourier,
  type Direction,
  type FogCourierTask,
  type Room,
} from './generate.ts';

/**
 * fog-courier: the agent sees one room at a time and is told the way once, in the instruction.
 * Actions: `go <dir>`, `look`, `take <item>`, `drop <item>`, `done`. Reward 1 iff at `done` the
 * item lies in the target room; running out of the step budget ends the episode with 0. No step
 * counter is shown: with one, the base learned to drop at a fixed step number instead of in the
 * target room (docs/decisions/0030).
 */
export class FogCourierEnv implements Environment {
  readonly name = 'fog-courier';
  readonly knobs: FogCourierKnobs;
  private task: FogCourierTask | null = null;
  private rooms: Room[] = [];
  private at = 0;
  private carrying: string[] = [];
  private steps = 0;
  private finished = false;

  constructor(knobs: Partial<FogCourierKnobs> = {}) {
    this.knobs = parseKnobs({ family: 'fog-courier', schema: fogCourierKnobs, input: knobs });
  }

  get current(): FogCourierTask {
    if (!this.task) throw new Error('fog-courier: call reset(seed) before reading the task');
    return this.task;
  }

  /** The room the agent is in (read-only view for tests and the dense generator). */
  get here(): Readonly<Room> {
    return this.rooms[this.at]!;
  }

  reset(seed: number): EnvReset {
    this.task = generateFogCourier(seed, this.knobs);
    this.rooms = this.task.rooms.map((r) => ({ ...r, exits: { ...r.exits }, items: [...r.items] }));
    this.at = 0;
    this.carrying = [];
    this.steps = 0;
    this.finished = false;
    const t = this.task;
    return { instruction: `${goalText(t)} . ${roomView(this.rooms[0]!)}` };
  }

  step(action: string): EnvStep {
    const task = this.current;
    if (this.finished) throw new Error('fog-courier: the episode is over; call reset(seed)');
    this.steps++;
    const ws = words(action);
    if (ws.length === 1 && ws[0] === 'done') {
      const ok = verifyFogCourier(task, this.rooms);
      this.finished = true;
      return { observation: ok ? 'correct' : 'wrong', done: true, reward: ok ? 1 : 0 };
    }
    const body = this.act(ws);
    const observation = body;
    if (this.steps >= task.budget) {
      this.finished = true;
      return { observation: `${observation} . no steps left`, done: true, reward: 0 };
    }
    return { observation, done: false, reward: 0 };
  }

  private act(ws: readonly string[]): string {
    const room = this.rooms[this.at]!;
    const [verb, arg] = ws;
    if (ws.length === 1 && verb === 'look') return roomView(room);
    if (ws.length === 2 && verb === 'go' && (DIRECTIONS as readonly string[]).includes(arg!)) {
      const next = room.exits[arg as Direction];
      if (next === undefined) return 'error';
      this.at = next;
      return roomView(this.rooms[next]!);
    }
    if (ws.length === 2 && verb === 'take') {
      const i = room.items.indexOf(arg!);
      if (i < 0) return 'item not here';
      room.items.splice(i, 1);
      this.carrying.push(arg!);
      return `ok , carrying ${this.carrying.join(' ')}`;
    }
    if (ws.length === 2 && verb === 'drop') {
      const i = this.carrying.indexOf(arg!);
      if (i < 0) return 'not carrying';
      this.carrying.splice(i, 1);
      room.items.push(arg!);
      room.items.sort();
      return 'ok';
    }
    return 'invalid action';
  }
}
