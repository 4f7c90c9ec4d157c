// Prints vitest's JSON report as one line: "N passed, N failed[, N skipped]".
import { readFileSync } from "node:fs";

const file = process.argv[2] ?? "test-results/vitest.json";
let report;
try {
  report = JSON.parse(readFileSync(file, "utf8"));
} catch {
  console.error(`no vitest report at ${file}: the tests did not run (see the output above)`);
  process.exit(1);
}
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
// numFailedTestSuites counts describe blocks too, so it cannot be added to the tests' count.
const failed = report.numFailedTests + countFilesThatDidNotLoad(report);
console.log(
  `${report.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`,
);

// A file that failed to load (or whose hooks threw) failed without a failed test: one failure.
function countFilesThatDidNotLoad(r) {
  return (r.testResults ?? []).filter(
    (s) => s.status === "failed" && !s.assertionResults?.some((a) => a.status === "failed"),
  ).length;
}
