// A node:test reporter that prints nothing until the run ends, then lists every failed test with
// its file and the first line of its error. scripts/test.mjs runs it beside the TAP reporter, so
// the last lines of a long run (all that CI shows) name what failed.
export default async function* failuresReporter(source) {
  const failed = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, details } = event.data;
    const error = details?.error;
    // A suite fails when one of its tests does; the test itself is listed.
    if (error?.failureType === 'subtestsFailed') continue;
    const cause = error?.cause ?? error;
    const message = String(cause?.message ?? cause ?? '')
      .split('\n')[0]
      .slice(0, 300);
    failed.push(`# FAILED ${file ?? '?'} :: ${name}${message ? ` — ${message}` : ''}`);
  }
  if (failed.length > 0) yield `\n# ${failed.length} failed:\n${failed.join('\n')}\n`;
}
