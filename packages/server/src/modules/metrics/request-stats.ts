import { Counter, Histogram, type Registry } from 'prom-client';

/** Upper bounds of the request duration histogram, in seconds. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5] as const;

/** The requests of one route and method: counts by status, and their durations. */
interface Series {
  readonly statuses: Map<number, number>;
  /** Requests per bucket (not cumulative); the last slot is above every bound. */
  readonly buckets: Float64Array;
  count: number;
  sum: number;
}

type Labels = Record<string, string | number>;
type Value = { labels: Labels; value: number; metricName?: string; sharedLabels?: Labels };

/**
 * Counts and times every HTTP request in plain numbers, for `tessera_http_requests_total` and
 * `tessera_http_request_duration_seconds`, which prom-client renders at each scrape (the two
 * classes below). Recording a request is two small Map lookups and a few additions: prom-client's
 * own `inc` and `observe` validate and hash their labels on every call, a few microseconds a
 * request on the /verify hot path (docs/BENCHMARKS.md, "Design measurements"). Routes are the
 * route table's patterns, methods the HTTP parser's, statuses three digits: the series are
 * bounded.
 */
export class RequestStats {
  readonly #routes = new Map<string, Map<string, Series>>();

  observe(method: string, route: string, status: number, seconds: number): void {
    let methods = this.#routes.get(route);
    if (methods === undefined) {
      methods = new Map();
      this.#routes.set(route, methods);
    }
    let series = methods.get(method);
    if (series === undefined) {
      series = {
        statuses: new Map(),
        buckets: new Float64Array(LATENCY_BUCKETS.length + 1),
        count: 0,
        sum: 0,
      };
      methods.set(method, series);
    }
    series.statuses.set(status, (series.statuses.get(status) ?? 0) + 1);
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[bucket]!) bucket++;
    series.buckets[bucket]!++;
    series.count++;
    series.sum += seconds;
  }

  reset(): void {
    this.#routes.clear();
  }

  /** The counter's samples, as prom-client's Counter gives them. */
  counts(): Value[] {
    const values: Value[] = [];
    for (const [route, methods] of this.#routes)
      for (const [method, series] of methods)
        for (const [status, value] of series.statuses)
          values.push({ labels: { method, route, status: String(status) }, value });
    return values;
  }

  /**
   * The histogram's samples as prom-client's Histogram renders them: cumulative buckets, +Inf,
   * sum and count, with the series' own labels apart (`sharedLabels`, printed after `le`).
   */
  durations(name: string): Value[] {
    const values: Value[] = [];
    for (const [route, methods] of this.#routes)
      for (const [method, series] of methods) {
        const sharedLabels = { method, route };
        let cumulative = 0;
        LATENCY_BUCKETS.forEach((le, i) => {
          cumulative += series.buckets[i]!;
          values.push({ labels: { le }, sharedLabels, value: cumulative, metricName: `${name}_bucket` });
        });
        values.push(
          { labels: { le: '+Inf' }, sharedLabels, value: series.count, metricName: `${name}_bucket` },
          { labels: {}, sharedLabels, value: series.sum, metricName: `${name}_sum` },
          { labels: {}, sharedLabels, value: series.count, metricName: `${name}_count` },
        );
      }
    return values;
  }
}

const REQUESTS = {
  name: 'tessera_http_requests_total',
  help: 'HTTP requests by route, method and status',
  labelNames: ['method', 'route', 'status'],
} as const;

const DURATIONS = {
  name: 'tessera_http_request_duration_seconds',
  help: 'HTTP request duration by route',
  labelNames: ['method', 'route'],
} as const;

/** `tessera_http_requests_total`, read from a RequestStats at each scrape. */
class RequestsCounter extends Counter<'method' | 'route' | 'status'> {
  constructor(
    private readonly stats: RequestStats,
    registry: Registry,
  ) {
    super({ ...REQUESTS, registers: [registry] });
  }

  override async get() {
    return {
      name: REQUESTS.name,
      help: REQUESTS.help,
      type: 'counter',
      aggregator: 'sum',
      values: this.stats.counts(),
    } as unknown as Awaited<ReturnType<Counter<'method' | 'route' | 'status'>['get']>>;
  }

  // prom-client's constructor resets the metric before `stats` is set.
  override reset(): void {
    this.stats?.reset();
  }
}

/** `tessera_http_request_duration_seconds`, read from a RequestStats at each scrape. */
class DurationHistogram extends Histogram<'method' | 'route'> {
  constructor(
    private readonly stats: RequestStats,
    registry: Registry,
  ) {
    super({ ...DURATIONS, buckets: [...LATENCY_BUCKETS], registers: [registry] });
  }

  /** The registry renders its text from this when it exists (labels apart, as prom-client's). */
  async getForPromString() {
    return {
      name: DURATIONS.name,
      help: DURATIONS.help,
      type: 'histogram',
      aggregator: 'sum',
      values: this.stats.durations(DURATIONS.name),
    };
  }

  /** The samples with each one's labels in one object (JSON export, cluster aggregation). */
  override async get() {
    const metric = await this.getForPromString();
    const values = metric.values.map(({ labels, sharedLabels, value, metricName }) => ({
      labels: { ...labels, ...sharedLabels },
      value,
      metricName,
    }));
    return { ...metric, values } as unknown as Awaited<ReturnType<Histogram<'method' | 'route'>['get']>>;
  }

  override reset(): void {
    this.stats?.reset();
  }
}

/** Registers the two request metrics in `registry`, fed by the returned RequestStats. */
export function requestMetrics(registry: Registry): RequestStats {
  const stats = new RequestStats();
  new RequestsCounter(stats, registry);
  new DurationHistogram(stats, registry);
  return stats;
}
