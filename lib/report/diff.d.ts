// Growth between two profiles (lib/report/diff.js).
import type { AllocationProfile, DiffOptions, ProfileDiff } from '../index.js';
import type { HeapModel } from './model.js';

/** Growth between two models (e.g. two pprof files read with readPprofFile). */
export function diffModels(base: HeapModel, current: HeapModel, options?: DiffOptions): ProfileDiff;
/** Growth between two in-process reads (also exported by the package root). */
export function diffProfiles(base: AllocationProfile, current: AllocationProfile, options?: DiffOptions): ProfileDiff;
