/** Relation words (src/words/vocab.ts). Every (subject, relation) pair has at most one value. */
export const RELATIONS = ['boss', 'friend', 'pet', 'home', 'rival', 'coach'] as const;
export const RELATION_COUNT = RELATIONS.length;
export const isRelation = (w: string | undefined): boolean =>
  w !== undefined && (RELATIONS as readonly string[]).includes(w);
