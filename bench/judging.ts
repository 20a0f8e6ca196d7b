// What the reports judge targets with (report.ts, oidc-report.ts).

export interface Target {
  name: string;
  /** The rule, in words. */
  rule: string;
  /** What was measured, in words (with the figures it comes from). */
  measured: string;
  /** The number the rule is judged on, formatted. */
  judged: string;
  met: boolean;
}

/** The middle value, or the mean of the two middle values. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
