// Prints the run's totals as one plain line ("jest: N passed, N failed"), the form CI logs are read
// in. Jest calls custom reporters before its own summary, so the line is written as the process
// exits, which makes it the closing line of the output.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `jest: ${results.numPassedTests} passed, ${results.numFailedTests} failed`;
    process.once('exit', () => process.stderr.write(`${skipped > 0 ? `${line}, ${skipped} skipped` : line}\n`));
  }
}

module.exports = SummaryReporter;
