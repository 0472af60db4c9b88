/**
 * The names curves carry in legends and pickers: a run's system and seed ("compaction-rl · seed 1"),
 * which is what tells runs apart in a pipeline, never its directory name (every run of a
 * `crl reproduce` directory shares one long timestamped prefix, which a legend cuts to the same
 * few characters). Where two runs would share a name (the same system and seed in two given
 * directories), the directory they came from is added, and failing that the run's id.
 */
export function legendNames(
  sources: ReadonlyArray<{ id: number; label: string; group: string; system: string | null; seed: number | null }>,
): Map<number, string> {
  const base = new Map(
    sources.map((s) => [
      s.id,
      s.system === null ? s.label : s.seed === null ? s.system : `${s.system} · seed ${s.seed}`,
    ]),
  );
  const clashing = (names: Map<number, string>) => {
    const count = new Map<string, number>();
    for (const n of names.values()) count.set(n, (count.get(n) ?? 0) + 1);
    return (id: number) => (count.get(names.get(id)!) ?? 0) > 1;
  };
  const firstClash = clashing(base);
  const withGroup = new Map(
    sources.map((s) => [s.id, firstClash(s.id) ? `${base.get(s.id)!} (${s.group})` : base.get(s.id)!]),
  );
  const secondClash = clashing(withGroup);
  return new Map(
    sources.map((s) => [s.id, secondClash(s.id) ? `${withGroup.get(s.id)!} #${s.id}` : withGroup.get(s.id)!]),
  );
}
