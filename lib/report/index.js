'use strict';
// Reports and diffs of heap profiles (pprof files or AllocationProfile reads), and the text of
// retainers per label; pure JS, no addon.

const { readPprof, readPprofFile, fromAllocationProfile, ReportError } = require('./model');
const { groupModel } = require('./aggregate');
const { summarizePprof, summarizeModel } = require('./summary');
const { diffModels, diffProfiles } = require('./diff');
const { reportText, diffText } = require('./text');
const { reportHtml, diffHtml } = require('./html');
const { retainersText, readRetainersFile } = require('./retainers');

module.exports = {
  readPprof,
  readPprofFile,
  fromAllocationProfile,
  groupModel,
  summarizePprof,
  summarizeModel,
  diffModels,
  diffProfiles,
  reportText,
  diffText,
  reportHtml,
  diffHtml,
  retainersText,
  readRetainersFile,
  ReportError,
};
