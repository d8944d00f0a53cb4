// Shared helpers of the dashboard: the API, reading proto3 JSON, formatting, building DOM.
// The files in server/http/web/js/ are concatenated into /dashboard.js (one script, one scope).
'use strict';

const TERMINAL_STATES = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
const SVG_NS = 'http://www.w3.org/2000/svg';

// GET an API path; resolves to the parsed JSON, rejects with a readable Error.
async function apiGet(path) {
  const res = await fetch(path, {credentials: 'same-origin', cache: 'no-store'});
  const text = await res.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw new Error(`${path}: HTTP ${res.status}: ${text.slice(0, 200)}`);
  }
  if (!res.ok) {
    const err = (body && body.error) || {};
    const hint = res.status === 401 ? ' (open /?token=<token> once to sign in)' : '';
    throw new Error(`${path}: ${err.code || 'HTTP ' + res.status}: ${err.message || ''}${hint}`);
  }
  return body;
}

// proto3 JSON writes int64 as strings and leaves out fields at their default value.
function num(value, fallback = 0) {
  if (value === undefined || value === null || value === '') return fallback;
  const n = Number(value);
  return Number.isNaN(n) ? fallback : n;
}

// The body kind of an accel.v1.Event: state | metrics | eval | sample | memory | checkpoint | log.
function eventKind(event) {
  for (const kind of ['metrics', 'eval', 'sample', 'memory', 'checkpoint', 'state', 'log']) {
    if (event[kind] !== undefined) return kind;
  }
  return 'unknown';
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  appendAll(node, children);
  return node;
}

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  appendAll(node, children);
  return node;
}

// Replaces node's children with `children`, skipping null, undefined and false.
function fill(node, ...children) {
  node.replaceChildren();
  appendAll(node, children);
  return node;
}

function setAttrs(node, attrs) {
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
}

function appendAll(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

function fmtBytes(bytes) {
  const b = num(bytes);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = Math.abs(b);
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  const digits = i === 0 || v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return `${b < 0 ? '-' : ''}${v.toFixed(digits)} ${units[i]}`;
}

// A number for a table cell or an axis: few digits, exponent for the very small or large.
function fmtNumber(value, digits = 4) {
  const v = Number(value);
  if (!Number.isFinite(v)) return String(value);
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6 || a < 1e-3) return v.toExponential(Math.max(0, digits - 2));
  if (Number.isInteger(v)) return v.toLocaleString('en-US');
  return Number(v.toPrecision(digits)).toString();
}

function fmtDuration(seconds) {
  let s = Math.max(0, Math.round(num(seconds)));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  s %= 60;
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s}s`;
  return `${s}s`;
}

// How long ago a Unix-microseconds time was.
function fmtAge(timeUs) {
  const us = num(timeUs);
  if (!us) return '—';
  return fmtDuration((Date.now() - us / 1000) / 1000) + ' ago';
}

function fmtTime(timeUs) {
  const us = num(timeUs);
  if (!us) return '—';
  return new Date(us / 1000).toLocaleTimeString('en-GB', {hour12: false});
}

function stateBadge(state) {
  const name = state || 'JOB_STATE_UNSPECIFIED';
  return el('span', {class: `badge state-${name.toLowerCase()}`, text: name});
}

// steps done / total of a Job message, and the fraction for a progress bar.
function jobProgress(job) {
  const total = num(job.spec && job.spec.train && job.spec.train.steps);
  const done = job.state === 'SUCCEEDED' ? total : num(job.last_step, -1) + 1;
  const fraction = total > 0 ? Math.min(1, Math.max(0, done / total)) : 0;
  return {done, total, fraction};
}

function progressBar(fraction, state) {
  const pct = (fraction * 100).toFixed(1);
  return el('div', {class: `progress state-${(state || '').toLowerCase()}`, title: `${pct}%`},
            el('div', {class: 'progress-fill', style: `width: ${pct}%`}));
}

function showBanner(message) {
  const banner = document.getElementById('banner');
  if (!message) {
    banner.hidden = true;
    return;
  }
  banner.textContent = message;
  banner.hidden = false;
}
