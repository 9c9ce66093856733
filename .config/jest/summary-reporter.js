// Prints the run's totals as one plain line ("jest: N passed, N failed"), the form CI logs are read in.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `jest: ${results.numPassedTests} passed, ${results.numFailedTests} failed`;
    process.stdout.write(`${skipped > 0 ? `${line}, ${skipped} skipped` : line}\n`);
  }
}

module.exports = SummaryReporter;
