// heap-labels/report: reports and diffs of pprof files and AllocationProfile reads, and the text of
// retainers per label.
export { readPprof, readPprofFile, fromAllocationProfile, ReportError, type HeapModel, type ModelSample, type Frame } from './model.js';
export { groupModel, type GroupedModel, type GroupRow, type SiteRow, type CallTreeNode } from './aggregate.js';
export { summarizePprof, summarizeModel, type ProfileSummary, type SummaryGroup, type SummaryOptions } from './summary.js';
export { diffModels, diffProfiles } from './diff.js';
export { reportText, diffText } from './text.js';
export { reportHtml, diffHtml } from './html.js';
export { retainersText, readRetainersFile } from './retainers.js';
export type { ProfileDiff, LabelGrowth, GrowthFigures, ReportFigures, DiffOptions } from '../index.js';
