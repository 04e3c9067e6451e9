// Prints the 15 slowest test files, then one closing line "tests: N passed, N failed" so logs end
// with a plain count.
const path = require('node:path');

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const files = results.testResults
      .map((r) => ({ file: path.relative(process.cwd(), r.testFilePath), ms: r.perfStats.end - r.perfStats.start }))
      .filter((f) => Number.isFinite(f.ms))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 15);
    if (files.length > 1) {
      process.stdout.write('\nslowest test files:\n');
      for (const f of files) process.stdout.write(`  ${(f.ms / 1000).toFixed(1).padStart(7)} s  ${f.file}\n`);
    }
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(
      `\ntests: ${results.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`,
    );
  }
}
module.exports = SummaryReporter;
