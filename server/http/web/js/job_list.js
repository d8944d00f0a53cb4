// The job list (route "#" or "#jobs"): every job acceld knows, newest first, with its progress
// and newest metrics, refreshed every 2 s; and the cluster's slots above it.

const LIST_REFRESH_MS = 2000;

class JobListView {
  constructor(root) {
    this.root = root;
    this.timer = null;
    this.table = el('div', {class: 'table-wrap'});
    this.cluster = el('div', {class: 'cards'});
    root.replaceChildren(el('h2', {text: 'Jobs'}), this.cluster, this.table);
  }

  start() {
    this.refresh();
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = null;
    this.stopped = true;
  }

  async refresh() {
    try {
      const [list, cluster] = await Promise.all([apiGet('/api/v1/jobs'), apiGet('/api/v1/cluster')]);
      if (this.stopped) return;
      this.renderCluster(cluster);
      this.renderJobs(list.jobs || [], list.metrics || {});
      showBanner('');
    } catch (err) {
      if (!this.stopped) showBanner(err.message);
    }
    if (!this.stopped) this.timer = setTimeout(() => this.refresh(), LIST_REFRESH_MS);
  }

  renderCluster(cluster) {
    const pools = cluster.pools && cluster.pools.length ? cluster.pools
      : [{device: cluster.device, total_slots: cluster.total_slots, free_slots: cluster.free_slots}];
    const cards = pools.map((p) => card(`${p.device || 'cpu'} slots`,
                                        `${num(p.free_slots)} free of ${num(p.total_slots)}`));
    cards.push(card('queued', String((cluster.queue || []).length)));
    cards.push(card('running', String((cluster.allocations || []).length)));
    this.cluster.replaceChildren(...cards);
    document.getElementById('cluster-summary').textContent = cluster.version || '';
  }

  renderJobs(jobs, metrics) {
    if (!jobs.length) {
      this.table.replaceChildren(el('p', {class: 'muted',
                                          text: 'No jobs yet. Submit one with accelctl submit.'}));
      return;
    }
    const numeric = new Set(['step', 'loss', 'tokens/s', 'age']);
    const head = el('tr', {}, ['id', 'name', 'state', 'progress', 'step', 'loss', 'tokens/s',
                               'age'].map((h) => el('th', {text: h, class: numeric.has(h) && 'num'})));
    const rows = jobs.map((job) => jobRow(job, metrics[job.id]));
    this.table.replaceChildren(el('table', {class: 'jobs', 'data-rows': jobs.length},
                                  el('thead', {}, head), el('tbody', {}, rows)));
  }
}

function card(label, value) {
  return el('div', {class: 'card'}, el('div', {class: 'card-label', text: label}),
            el('div', {class: 'card-value', text: value}));
}

function jobRow(job, latest) {
  const {done, total, fraction} = jobProgress(job);
  const m = latest || {};
  const link = el('a', {href: `#job/${encodeURIComponent(job.id)}`, text: job.id});
  return el('tr', {'data-job': job.id},
            el('td', {}, link),
            el('td', {text: (job.spec && job.spec.name) || ''}),
            el('td', {}, stateBadge(job.state)),
            el('td', {}, progressBar(fraction, job.state)),
            el('td', {class: 'num', text: total ? `${done} / ${total}` : String(done)}),
            el('td', {class: 'num', text: latest ? fmtNumber(num(m.loss, NaN)) : '—'}),
            el('td', {class: 'num', text: latest ? fmtNumber(Math.round(num(m.tokens_per_s))) : '—'}),
            el('td', {class: 'num', title: new Date(num(job.submit_time_us) / 1000).toISOString(),
                      text: fmtAge(job.submit_time_us)}));
}

// ---- the router: "#" (or nothing) is the job list, "#job/<id>" a job's page. Each view polls
// on its own timers and is stopped when the route changes.

let currentView = null;

function route() {
  if (currentView) currentView.stop();
  const root = document.getElementById('view');
  const match = /^#job\/(.+)$/.exec(window.location.hash);
  currentView = match ? new JobPageView(root, decodeURIComponent(match[1])) : new JobListView(root);
  showBanner('');
  window.scrollTo(0, 0);
  currentView.start();
}

window.addEventListener('hashchange', route);
// Run after the whole script (job_page.js comes later in it) and the page are in.
if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', route);
} else {
  setTimeout(route, 0);
}
