// A job's page (route "#job/<id>"): its summary, line charts over steps from metrics events,
// memory per rank, the checkpoint timeline and the live event log. Events are read once from
// the start, then polled after the newest seq every 1.5 s until the job has ended.

const JOB_POLL_MS = 1500;
const EVENT_PAGE = 10000;  // the API's largest page
const LOG_ROWS = 400;      // the log shows the newest this many events
const SAMPLE_ROWS = 5;     // the samples list shows the newest this many (train.sample_every)

class JobPageView {
  constructor(root, jobId) {
    this.root = root;
    this.jobId = jobId;
    this.job = null;
    this.events = [];
    this.lastSeq = 0;
    this.timer = null;
    this.summary = el('section', {class: 'summary'});
    this.charts = el('section', {class: 'chart-grid training'});
    this.samples = el('section', {});
    this.memory = el('section', {});
    this.checkpoints = el('section', {});
    this.log = el('div', {class: 'event-log', 'data-events': 0});
    root.replaceChildren(
        el('p', {class: 'crumbs'}, el('a', {href: '#', text: '← all jobs'})),
        this.summary,
        el('h3', {text: 'Training'}), this.charts, this.samples,
        el('h3', {text: 'Memory per rank'}), this.memory,
        el('h3', {text: 'Checkpoints'}), this.checkpoints,
        el('h3', {text: 'Event log'}), this.log);
  }

  start() {
    this.poll();
  }

  stop() {
    clearTimeout(this.timer);
    this.stopped = true;
  }

  async poll() {
    let ended = false;
    try {
      const job = await apiGet(`/api/v1/jobs/${encodeURIComponent(this.jobId)}`);
      // Everything up to the state just read; a finished job's last events are in by then.
      const fresh = await this.readNewEvents();
      if (this.stopped) return;
      this.job = job;
      ended = TERMINAL_STATES.has(job.state) && this.lastSeq >= num(job.last_seq);
      this.render(fresh.length > 0 || !this.rendered);
      showBanner('');
    } catch (err) {
      if (!this.stopped) showBanner(err.message);
    }
    if (!this.stopped && !ended) this.timer = setTimeout(() => this.poll(), JOB_POLL_MS);
  }

  // Pages through the events after the newest one seen; returns the new ones.
  async readNewEvents() {
    const fresh = [];
    for (;;) {
      const page = await apiGet(`/api/v1/jobs/${encodeURIComponent(this.jobId)}/events` +
                                `?after=${this.lastSeq}&limit=${EVENT_PAGE}`);
      const events = page.events || [];
      if (this.stopped) return fresh;
      for (const e of events) {
        this.events.push(e);
        fresh.push(e);
        this.lastSeq = Math.max(this.lastSeq, num(e.seq));
      }
      if (events.length < EVENT_PAGE || this.lastSeq >= num(page.last_seq)) return fresh;
    }
  }

  render(eventsChanged) {
    this.rendered = true;
    this.renderSummary();
    if (!eventsChanged) return;
    const metrics = this.events.filter((e) => e.metrics !== undefined).map((e) => e.metrics);
    const at = (m) => num(m.step) + 1;  // steps completed
    const series = (field) => metrics.map((m) => ({x: at(m), y: num(m[field], NaN)}));
    // Evaluations on eval.data, at the steps completed before each (0: the starting weights).
    const evals = this.events.filter((e) => e.eval !== undefined).map((e) => e.eval);
    const evalSeries = evals.map((v) => ({x: num(v.step), y: num(v.eval_loss, NaN)}));
    this.charts.replaceChildren(
        lineChart('loss', 'Loss', series('loss'), {color: PALETTE[0]}),
        lineChart('eval_loss', 'Eval loss', evalSeries, {color: PALETTE[3]}),
        lineChart('lr', 'Learning rate', series('lr'), {color: PALETTE[4], zero: true}),
        lineChart('grad_norm', 'Gradient norm', series('grad_norm'), {color: PALETTE[1]}),
        lineChart('tokens_per_s', 'Tokens / s', series('tokens_per_s'),
                  {color: PALETTE[2], zero: true}));
    this.memory.replaceChildren(memoryCharts(memoryRecords(this.events)));
    this.renderSamples();
    this.renderCheckpoints();
    this.renderLog();
  }

  renderSummary() {
    const job = this.job;
    const {done, total, fraction} = jobProgress(job);
    const plan = job.plan || {};
    const latest = [...this.events].reverse().find((e) => e.metrics !== undefined);
    const m = latest ? latest.metrics : null;
    const latestEval = [...this.events].reverse().find((e) => e.eval !== undefined);
    const facts = [
      ['state', stateBadge(job.state)],
      ['steps', total ? `${done} / ${total}` : String(done)],
      ['loss', m ? fmtNumber(num(m.loss, NaN)) : '—'],
      ['eval loss', latestEval ? fmtNumber(num(latestEval.eval.eval_loss, NaN)) : '—'],
      ['tokens/s', m ? fmtNumber(Math.round(num(m.tokens_per_s))) : '—'],
      ['elapsed', m ? fmtDuration(m.elapsed_seconds) : '—'],
      ['eta', m && !TERMINAL_STATES.has(job.state) ? fmtDuration(m.eta_seconds) : '—'],
      ['strategy', plan.strategy || '—'],
      ['ranks', String(num(plan.world_size, num(job.spec && job.spec.resources &&
                                               job.spec.resources.num_processes, 1)))],
      ['precision', plan.precision || '—'],
      ['device', plan.device || (job.spec && job.spec.resources && job.spec.resources.device) || 'cpu'],
      ['attempt', String(num(job.attempt))],
      ['submitted', fmtAge(job.submit_time_us)],
    ];
    fill(this.summary,
        el('h2', {}, `${(job.spec && job.spec.name) || job.id} `, el('span', {class: 'muted', text: job.id})),
        progressBar(fraction, job.state),
        el('dl', {class: 'facts'}, facts.map(([k, v]) => el('div', {}, el('dt', {text: k}), el('dd', {}, v)))),
        job.error ? el('pre', {class: 'error', text: job.error}) : null);
  }

  // The newest samples of the weights (train.sample_every), newest first, under the charts; the
  // text as written (textContent: never markup), whitespace kept.
  renderSamples() {
    const samples = this.events.filter((e) => e.sample !== undefined).map((e) => e.sample);
    if (samples.length === 0) {
      this.samples.replaceChildren();
      return;
    }
    const newest = samples.slice(-SAMPLE_ROWS).reverse();
    fill(this.samples,
        el('h4', {text: `Samples (newest ${newest.length} of ${samples.length})`}),
        el('ol', {class: 'samples', 'data-samples': samples.length},
           newest.map((s) => el('li', {'data-step': num(s.step)},
               el('span', {class: 'sample-step', text: `step ${num(s.step)}`}),
               el('span', {class: 'sample-prompt', text: s.prompt || ''}),
               el('span', {class: 'sample-text', text: s.text || ''})))));
  }

  renderCheckpoints() {
    const saved = this.events.filter((e) => e.checkpoint !== undefined).map((e) => e.checkpoint);
    const bars = saved.map((c) => ({x: num(c.step), y: num(c.seconds),
                                    label: `step ${num(c.step)}: ${fmtBytes(c.bytes)} in ` +
                                           `${fmtNumber(num(c.seconds), 3)} s (${c.kind || ''})`}));
    const rows = saved.map((c) => el('tr', {},
        el('td', {class: 'num', text: String(num(c.step))}),
        el('td', {class: 'num', text: fmtBytes(c.bytes)}),
        el('td', {class: 'num', text: `${fmtNumber(num(c.seconds), 3)} s`}),
        el('td', {text: c.kind || ''}),
        el('td', {class: 'path', text: c.path || ''})));
    const table = saved.length
      ? el('div', {class: 'table-wrap'},
           el('table', {class: 'jobs'},
              el('thead', {}, el('tr', {}, ['step', 'bytes', 'seconds', 'kind', 'path']
                                              .map((h) => el('th', {text: h})))),
              el('tbody', {}, rows)))
      : null;
    fill(this.checkpoints,
        el('div', {class: 'chart-grid'},
           barChart('checkpoints', 'Checkpoint save time (s)', bars,
                    {yFormat: (v) => fmtNumber(v, 3)})),
        table);
  }

  renderLog() {
    const shown = this.events.slice(-LOG_ROWS);
    const rows = shown.map((e) => {
      const kind = eventKind(e);
      return el('div', {class: `log-row kind-${kind}`},
                el('span', {class: 'log-seq', text: `#${num(e.seq)}`}),
                el('span', {class: 'log-time', text: fmtTime(e.time_us)}),
                el('span', {class: 'log-rank', text: num(e.rank) < 0 ? 'job' : `r${num(e.rank)}`}),
                el('span', {class: 'log-kind', text: kind}),
                el('span', {class: 'log-text', text: describeEvent(e, kind)}));
    });
    const follow = this.log.scrollTop + this.log.clientHeight >= this.log.scrollHeight - 8;
    this.log.replaceChildren(...rows);
    this.log.setAttribute('data-events', this.events.length);
    if (follow) this.log.scrollTop = this.log.scrollHeight;
  }
}

// One line about an event, for the log.
function describeEvent(e, kind) {
  switch (kind) {
    case 'state':
      return `${e.state.state || ''} ${e.state.message || ''}`.trim();
    case 'metrics': {
      const m = e.metrics;
      return `step ${num(m.step) + 1}/${num(m.total_steps)} loss ${fmtNumber(num(m.loss, NaN))} ` +
             `lr ${fmtNumber(num(m.lr))} grad_norm ${fmtNumber(num(m.grad_norm))} ` +
             `${fmtNumber(Math.round(num(m.tokens_per_s)))} tok/s${m.skipped ? ' (skipped)' : ''}`;
    }
    case 'memory': {
      const mem = e.memory;
      return `step ${num(mem.step)}: compute ${fmtBytes(mem.device_current)} ` +
             `(peak ${fmtBytes(mem.device_peak)}), host ${fmtBytes(mem.host_current)} ` +
             `(peak ${fmtBytes(mem.host_peak)})`;
    }
    case 'checkpoint': {
      const c = e.checkpoint;
      return `saved step ${num(c.step)}: ${fmtBytes(c.bytes)} in ${fmtNumber(num(c.seconds), 3)} s ` +
             `→ ${c.path || ''}`;
    }
    case 'eval': {
      const v = e.eval;
      return `eval step ${num(v.step)}: loss ${fmtNumber(num(v.eval_loss, NaN))} perplexity ` +
             `${fmtNumber(num(v.eval_perplexity, NaN))} over ${num(v.eval_tokens)} targets`;
    }
    case 'sample':
      return `step ${num(e.sample.step)} sample: ${JSON.stringify(e.sample.text || '')}`;
    case 'log':
      return `[${e.log.stream || ''}] ${e.log.line || ''}`;
    default:
      return JSON.stringify(e);
  }
}
