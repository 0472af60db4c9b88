import { KNOWN_FAMILIES } from './builtin.ts';
import type { TaskFamily } from './family.ts';

/**
 * Task families by name (house style: registries, not branches). Every built-in family is
 * registered when this module loads, so a lookup never depends on an earlier call; a library user
 * adds families with registerFamily.
 */
const families = new Map<string, TaskFamily>(KNOWN_FAMILIES.map((f) => [f.name, f]));

export function registerFamily(family: TaskFamily): void {
  if (families.has(family.name)) throw new Error(`task family ${family.name} is already registered`);
  families.set(family.name, family);
}

/** Looks up a family; an unknown name throws an error listing the valid ones. */
export function getFamily(name: string): TaskFamily {
  const f = families.get(name);
  if (!f) {
    const known = [...families.keys()].sort().join(', ') || '(none registered)';
    throw new Error(`unknown environment ${JSON.stringify(name)}; valid names: ${known}`);
  }
  return f;
}

export function familyNames(): string[] {
  return [...families.keys()].sort();
}
