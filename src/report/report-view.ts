import { shortVersion } from '../util/provenance.ts';
import { isAbsolute } from 'node:path';
import type { PathLabel, ReportData } from './collect-runs.ts';
import type { RenderedFigure } from './plots.ts';
import type { MixedNote } from './run-files.ts';
import type { Table } from './tables.ts';

/** What the renderers (markdown, HTML) draw: one view, two formats. */
export interface ReportView {
  title: string;
  tables: readonly Table[];
  figures: readonly RenderedFigure[];
  warnings: readonly string[];
  sources: readonly string[];
  provenance: ProvenanceSection;
}

/** Where the report's numbers come from (src/util/provenance.ts). */
export interface ProvenanceSection {
  /** The `crl report` call that wrote this report. */
  report: { version: string; command: string; createdAt: string };
  /** Each `crl reproduce` call on the pipeline directories read. */
  invocations: { version: string; command: string; createdAt: string }[];
  /** Run directories and evaluation files counted by the code version that made them. */
  runsByVersion: [string, number][];
  evalsByVersion: [string, number][];
  /** Run directories and evaluation files by the kernels they were computed with. */
  byKernels: [string, number][];
  mixed: readonly MixedNote[];
  runs: { label: string; system: string; version: string; configHash: string }[];
}

const tally = (values: readonly string[]): [string, number][] => {
  const m = new Map<string, number>();
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1);
  return [...m].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
};

/**
 * A command line as the report shows it: absolute paths (`/x/y`, `--out=/x/y`) named by `label`,
 * relative to the report, so the report carries no machine path.
 */
export function showCommand(command: readonly string[], label: PathLabel): string {
  return command
    .map((arg) => {
      const eq = /^(--[^=]+=)(.*)$/.exec(arg);
      const [prefix, value] = eq ? [eq[1]!, eq[2]!] : ['', arg];
      return isAbsolute(value) ? `${prefix}${label(value)}` : arg;
    })
    .join(' ');
}

export function provenanceSection(o: {
  data: ReportData;
  report: { commit: string | null; dirty: boolean | null; command: readonly string[]; createdAt: string };
  label: PathLabel;
}): ProvenanceSection {
  const { data } = o;
  return {
    report: {
      version: shortVersion(o.report),
      command: showCommand(o.report.command, o.label),
      createdAt: o.report.createdAt,
    },
    invocations: data.invocations.map((i) => ({
      version: shortVersion(i),
      command: showCommand(i.command, o.label),
      createdAt: i.createdAt,
    })),
    runsByVersion: tally(data.runs.map((r) => shortVersion(r.provenance))),
    evalsByVersion: tally(data.evals.map((e) => shortVersion(e.provenance))),
    byKernels: tally([...data.runs, ...data.evals].map((x) => x.provenance?.kernels ?? 'not recorded')),
    mixed: data.mixed,
    runs: data.runs.map((r) => ({
      label: r.label,
      system: r.system,
      version: shortVersion(r.provenance),
      configHash: r.provenance?.configHash ?? 'unknown',
    })),
  };
}

/** The provenance section as lines of markdown (the HTML renderer has its own markup). */
export function provenanceLines(p: ProvenanceSection): string[] {
  const counts = (xs: [string, number][]) => xs.map(([v, n]) => `${v} (${n})`).join(', ') || 'none';
  const out = [
    `- This report: code ${p.report.version}, \`${p.report.command}\`, ${p.report.createdAt}.`,
    ...p.invocations.map((i) => `- Pipeline run: code ${i.version}, \`${i.command}\`, ${i.createdAt}.`),
    `- Run directories by code version: ${counts(p.runsByVersion)}.`,
    `- Evaluation files by code version: ${counts(p.evalsByVersion)}.`,
    `- Runs and evaluations by kernels (another instruction set trains another path): ${counts(p.byKernels)}.`,
    p.mixed.length
      ? `- **Mixed**: reused with another config: ${p.mixed.map((m) => `\`${m.path}\` (${m.differs.join('; ')})`).join(', ')}.`
      : '- Mixed reuses: none.',
  ];
  return out;
}
