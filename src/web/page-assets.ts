// The run page's own style and script. Both are fixed strings, allowed by their CSP hashes; the
// script never evaluates data: it reads the DOM's text and inserts only markup the server
// rendered (and escaped) itself.
import { cspHash } from './html.js';

export const PAGE_STYLE = `
:root{--fg:#1f2328;--mut:#59636e;--bg:#fff;--bg2:#f6f8fa;--bd:#d1d9e0;--add:#dafbe1;--del:#ffebe9;--hunk:#ddf4ff;--acc:#0969da;--ok:#1a7f37;--bad:#cf222e;--kw:#cf222e;--str:#0a3069;--num:#0550ae}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--mut:#9198a1;--bg:#0d1117;--bg2:#151b23;--bd:#3d444d;--add:#12361f;--del:#4b1a1c;--hunk:#0c2d6b;--acc:#4493f8;--ok:#3fb950;--bad:#f85149;--kw:#ff7b72;--str:#a5d6ff;--num:#79c0ff}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
[hidden]{display:none!important}
a{color:var(--acc)}
header.run,main{max-width:1200px;margin:0 auto;padding:12px 20px}
header.run h1{font-size:20px;margin:4px 0 8px;overflow-wrap:anywhere}
.facts{display:flex;flex-wrap:wrap;gap:4px 18px;margin:0;color:var(--mut)}
.facts div{white-space:nowrap}.facts dt{display:inline;font-weight:600}.facts dd{display:inline;margin:0 0 0 4px;color:var(--fg)}
.badge{display:inline-block;padding:0 7px;border-radius:10px;border:1px solid var(--bd);font-size:12px}
.badge.ok{color:var(--ok);border-color:var(--ok)}.badge.bad{color:var(--bad);border-color:var(--bad)}
section.block{margin:14px 0;border:1px solid var(--bd);border-radius:6px}
section.block>h2,details.block>summary{margin:0;padding:6px 10px;font-size:15px;background:var(--bg2);border-bottom:1px solid var(--bd)}
.pad{padding:8px 10px}
pre{margin:0;padding:6px 10px;font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;overflow-wrap:anywhere;background:var(--bg2)}
table.evidence{border-collapse:collapse;width:100%}
table.evidence td,table.evidence th{border-top:1px solid var(--bd);padding:4px 10px;text-align:left;vertical-align:top}
details.file{border-top:1px solid var(--bd)}
details.file>summary{padding:4px 10px;cursor:pointer;font-family:ui-monospace,monospace;overflow-wrap:anywhere}
.l{display:block}.l.add{background:var(--add)}.l.del{background:var(--del)}.l.hunk{background:var(--hunk);color:var(--mut)}.l.meta{color:var(--mut)}
.tk-k{color:var(--kw);font-weight:600}.tk-s{color:var(--str)}.tk-c{color:var(--mut);font-style:italic}.tk-n{color:var(--num)}
.n-add{color:var(--ok)}.n-del{color:var(--bad)}
ol.summary{margin:0;padding:6px 10px;list-style:none;max-height:320px;overflow:auto;font:12px/1.6 ui-monospace,monospace}
ol.summary li{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
ol.summary .n{display:inline-block;min-width:3.5em;color:var(--mut)}
ol.summary a{color:inherit;text-decoration:none}ol.summary a:hover{text-decoration:underline}
.toolbar{display:flex;gap:10px;align-items:center;position:sticky;top:0;z-index:2;background:var(--bg);padding:8px 0;border-bottom:1px solid var(--bd)}
.toolbar input{flex:1;padding:4px 8px;font:inherit}.toolbar select{padding:4px;font:inherit}.toolbar .count{color:var(--mut);font-size:12px}
article.step{border:1px solid var(--bd);border-radius:6px;margin:10px 0;scroll-margin-top:52px}
article.step:target{outline:2px solid var(--acc)}
article.step>h3{margin:0;padding:5px 10px;font-size:13px;background:var(--bg2);border-bottom:1px solid var(--bd);display:flex;gap:10px;flex-wrap:wrap}
article.step>h3 .meta{margin-left:auto;color:var(--mut);font-weight:400}
.permalink{text-decoration:none;font-family:ui-monospace,monospace}
.call{border-top:1px dashed var(--bd)}.call:first-child{border-top:0}
.call-head{padding:5px 10px;font-family:ui-monospace,monospace;font-size:12px;overflow-wrap:anywhere}
.call-head .tool{font-weight:700;margin-right:6px}.call-head .desc{color:var(--mut);margin-left:6px;font-family:inherit}
.obs-label{padding:2px 10px;color:var(--mut);font-size:12px}
pre.folded{max-height:16.5em;overflow:hidden}
button.show-all{margin:2px 10px 6px;font-size:12px;cursor:pointer}
details.reasoning>summary,details.out>summary{padding:4px 10px;cursor:pointer;color:var(--mut);font-size:12px}
.content{padding:0}
nav.tabs{display:flex;gap:6px;margin:10px 0}
nav.tabs button{padding:4px 10px;cursor:pointer;font:inherit;border:1px solid var(--bd);background:var(--bg2);border-radius:6px}
nav.tabs button[aria-selected=true]{border-color:var(--acc);font-weight:600}
.live{color:var(--acc)}
.empty{color:var(--mut);padding:8px 10px}
`;

export const PAGE_SCRIPT = `(() => {
'use strict';
const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
const textOf = (el) => {
  if (el.frognanoText === undefined) el.frognanoText = el.textContent.toLowerCase();
  return el.frognanoText;
};
function applyFilter(attempt) {
  if (!attempt) return;
  const search = attempt.querySelector('input.search');
  const select = attempt.querySelector('select.tool-filter');
  const q = search ? search.value.trim().toLowerCase() : '';
  const tool = select ? select.value : '';
  let shown = 0;
  const steps = $$('article.step', attempt);
  for (const step of steps) {
    const tools = (step.getAttribute('data-tools') || '').split(' ');
    const ok = (!tool || tools.includes(tool)) && (!q || textOf(step).includes(q));
    step.hidden = !ok;
    const item = attempt.querySelector('li[data-step="' + step.id + '"]');
    if (item) item.hidden = !ok;
    if (ok) shown++;
  }
  const count = attempt.querySelector('.count');
  if (count) count.textContent = (q || tool) ? shown + ' of ' + steps.length + ' steps' : steps.length + ' steps';
}
function selectAttempt(id) {
  for (const tab of $$('nav.tabs button')) tab.setAttribute('aria-selected', String(tab.getAttribute('data-attempt') === id));
  for (const a of $$('section.attempt')) a.hidden = $$('nav.tabs button').length > 0 && a.id !== id;
}
function showHash() {
  const id = decodeURIComponent(location.hash.slice(1));
  if (!id) return;
  const target = document.getElementById(id);
  if (!target) return;
  const attempt = target.closest('section.attempt');
  if (attempt && attempt.hidden) selectAttempt(attempt.id);
  if (target.hidden && attempt) {
    const search = attempt.querySelector('input.search');
    const select = attempt.querySelector('select.tool-filter');
    if (search) search.value = '';
    if (select) select.value = '';
    applyFilter(attempt);
  }
  target.scrollIntoView();
}
document.addEventListener('click', (event) => {
  const el = event.target instanceof Element ? event.target : null;
  if (!el) return;
  const more = el.closest('button.show-all');
  if (more) {
    const pre = more.previousElementSibling;
    if (pre) {
      const folded = pre.classList.toggle('folded');
      more.textContent = folded ? more.getAttribute('data-label') : 'fold';
    }
    return;
  }
  const tab = el.closest('nav.tabs button');
  if (tab) selectAttempt(tab.getAttribute('data-attempt'));
});
let timer;
document.addEventListener('input', (event) => {
  const el = event.target instanceof Element ? event.target : null;
  if (!el || !el.matches('input.search, select.tool-filter')) return;
  clearTimeout(timer);
  timer = setTimeout(() => applyFilter(el.closest('section.attempt')), 120);
});
window.addEventListener('hashchange', showHash);
for (const a of $$('section.attempt')) applyFilter(a);
const first = $$('nav.tabs button')[0];
if (first) selectAttempt(first.getAttribute('data-attempt'));
showHash();

const liveEl = document.getElementById('frognano-live');
if (!liveEl) return;
const live = JSON.parse(liveEl.textContent);
let after = live.after;
let delay = 2000;
async function poll() {
  try {
    const res = await fetch(live.url + '?after=' + after, { cache: 'no-store', credentials: 'same-origin' });
    if (!res.ok) throw new Error(String(res.status));
    const update = await res.json();
    const header = document.getElementById('run-header');
    if (header && typeof update.header === 'string') header.innerHTML = update.header;
    if (typeof update.final === 'string') {
      const run = document.getElementById('run');
      if (run) run.innerHTML = update.final;
      for (const a of $$('section.attempt')) applyFilter(a);
      return;
    }
    const attempt = document.querySelector('section.attempt[data-live]');
    if (attempt && update.steps) {
      const list = attempt.querySelector('div.steps');
      const summary = attempt.querySelector('ol.summary');
      const empty = attempt.querySelector('.steps .empty');
      if (empty) empty.remove();
      if (list) list.insertAdjacentHTML('beforeend', update.steps);
      if (summary) summary.insertAdjacentHTML('beforeend', update.summary);
      applyFilter(attempt);
    }
    after = update.after;
    delay = 2000;
  } catch (error) {
    delay = Math.min(delay * 2, 15000);
  }
  setTimeout(poll, delay);
}
setTimeout(poll, delay);
})();`;

export const SCRIPT_HASH = cspHash(PAGE_SCRIPT);
export const STYLE_HASH = cspHash(PAGE_STYLE);

/** The run page's policy: only its own script and style; fetches to its own origin when live. */
export function runPageCsp(options: { live: boolean; header?: boolean }): string {
  return [
    "default-src 'none'",
    `script-src ${SCRIPT_HASH}`,
    `style-src ${STYLE_HASH}`,
    `connect-src ${options.live ? "'self'" : "'none'"}`,
    "img-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    // Only honoured in a header, not in a <meta> tag.
    ...(options.header ? ["frame-ancestors 'none'"] : []),
  ].join('; ');
}
