import { type ReactNode, useId, useState } from 'react';
import type { Stats } from '../api/types.js';
import { Chart } from '../components/chart.js';
import { Loaded, PageTitle, Time, useResource } from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { count, fill, locale, t } from '../i18n/index.js';
import { methodText } from './user-methods.js';

const RANGES = {
  day: { hours: 24, bucket: 'hour' },
  week: { hours: 24 * 7, bucket: 'day' },
  month: { hours: 24 * 30, bucket: 'day' },
} as const;
type Range = keyof typeof RANGES;

const hourLabel = new Intl.DateTimeFormat(locale, { hour: '2-digit', minute: '2-digit' });
const dayLabel = new Intl.DateTimeFormat(locale, { month: 'short', day: 'numeric' });

/** The methods, in a fixed order (so each keeps its colour), then any other the service reports. */
const METHODS = ['OTP', 'BIOMETRIC', 'TRUSTED DEVICE', 'PIN'];

/** The charts of one period: sign-ins per method, failures, codes sent, refresh-token reuse. */
function Charts(props: { stats: Stats }): ReactNode {
  const { stats } = props;
  const format = stats.bucket === 'hour' ? hourLabel : dayLabel;
  const labels = stats.buckets.map((b) => format.format(new Date(b.start)));
  const seen = new Set(stats.buckets.flatMap((b) => Object.keys(b.sign_ins)));
  const methods = [...METHODS.filter((m) => seen.has(m)), ...[...seen].filter((m) => !METHODS.includes(m))];
  const perMethod = (methods.length ? methods : METHODS.slice(0, 1)).map((m) => ({
    name: methodText(m),
    values: stats.buckets.map((b) => b.sign_ins[m] ?? 0),
  }));
  const total = (pick: (b: Stats['buckets'][number]) => number) =>
    stats.buckets.reduce((sum, b) => sum + pick(b), 0);
  const signIns = total((b) => Object.values(b.sign_ins).reduce((a, c) => a + c, 0));
  return (
    <>
      <ul className="totals" aria-label={t.totals}>
        <li>
          {t.signIns}
          <strong>{count(signIns)}</strong>
        </li>
        <li>
          {t.failures}
          <strong>{count(total((b) => b.failures))}</strong>
        </li>
        <li>
          {t.otpSends}
          <strong>{count(total((b) => b.otp_sends))}</strong>
        </li>
        <li>
          {t.reuseDetections}
          <strong>{count(total((b) => b.reuse_detections))}</strong>
        </li>
      </ul>
      <div className="grid">
        <Chart title={t.chartSignIns} labels={labels} series={perMethod} />
        <Chart
          title={t.chartFailures}
          kind="bar"
          labels={labels}
          series={[{ name: t.failures, values: stats.buckets.map((b) => b.failures) }]}
        />
        <Chart
          title={t.chartOtp}
          kind="bar"
          labels={labels}
          series={[{ name: t.otpSends, values: stats.buckets.map((b) => b.otp_sends) }]}
        />
        <Chart
          title={t.chartReuse}
          kind="bar"
          labels={labels}
          series={[{ name: t.reuseDetections, values: stats.buckets.map((b) => b.reuse_detections) }]}
        />
      </div>
      <Budgets budgets={stats.otp_budgets} />
    </>
  );
}

const BUDGET_NAMES = {
  'email hour': 'budgetEmailHour',
  'email day': 'budgetEmailDay',
  'sms hour': 'budgetSmsHour',
  'sms day': 'budgetSmsDay',
} as const;

/** The OTP send budgets as they stand now: what each window has used of its limit, and when it ends. */
function Budgets(props: { budgets: Stats['otp_budgets'] }): ReactNode {
  return (
    <section className="card" aria-labelledby="otp-budgets">
      <h2 id="otp-budgets">{t.budgetsTitle}</h2>
      <p className="muted">{t.budgetsHint}</p>
      <table className="stack">
        <caption className="sr-only">{t.budgetsTitle}</caption>
        <thead>
          <tr>
            <th scope="col">{t.budget}</th>
            <th scope="col">{t.budgetUsed}</th>
            <th scope="col">{t.budgetEnds}</th>
          </tr>
        </thead>
        <tbody>
          {props.budgets.map((b) => (
            <tr key={`${b.channel} ${b.period}`}>
              <th scope="row" data-label={t.budget}>
                {t[BUDGET_NAMES[`${b.channel} ${b.period}`]]}
              </th>
              <td data-label={t.budgetUsed}>
                {b.limit === null
                  ? fill(t.budgetOff, { used: count(b.used) })
                  : fill(t.budgetOf, {
                      used: count(b.used),
                      limit: count(b.limit),
                      percent: count(Math.floor((100 * b.used) / b.limit)),
                    })}
              </td>
              <td data-label={t.budgetEnds}>{b.resets_at ? <Time at={b.resets_at} /> : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** The project at a glance: sign-ins and their failures over the last day, week or month. */
export function OverviewPage(): ReactNode {
  const { api, project } = useConsole();
  const key = useProject();
  const [range, setRange] = useState<Range>('week');
  const id = useId();
  const stats = useResource(() => {
    const { hours, bucket } = RANGES[range];
    const step = bucket === 'hour' ? 3_600_000 : 86_400_000;
    // Whole buckets, ending with the current one.
    const to = new Date(Math.ceil(Date.now() / step) * step);
    const from = new Date(to.getTime() - hours * 3_600_000);
    return api.stats(key, { from: from.toISOString(), to: to.toISOString(), bucket });
  }, [api, key, range]);
  return (
    <>
      <PageTitle
        actions={
          <div className="inline-form">
            <label htmlFor={id}>{t.period}</label>
            <select id={id} value={range} onChange={(event) => setRange(event.target.value as Range)}>
              <option value="day">{t.lastDay}</option>
              <option value="week">{t.lastWeek}</option>
              <option value="month">{t.lastMonth}</option>
            </select>
          </div>
        }
      >
        {fill(t.overviewTitle, { project: project?.name ?? '' })}
      </PageTitle>
      <Loaded resource={stats}>{(data) => <Charts stats={data} />}</Loaded>
    </>
  );
}
