// ESM form of the preload (`node --import heap-labels/register app.mjs`): the same module
// instance as `-r heap-labels/register`, so using both starts one agent.
import './entries/register.js';
