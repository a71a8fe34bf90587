// `heap-labels/register` is a preload (`node -r heap-labels/register` or
// `node --import heap-labels/register`): it starts the agent from the HEAP_LABELS_* environment
// variables and exports nothing. Use `startAgent` from `heap-labels` to do the same from code.
export {};
