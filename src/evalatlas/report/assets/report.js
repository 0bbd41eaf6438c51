/* evalatlas report page script: tables, lazy charts, drill-down, downloads.
   Every string from the data goes into the page with textContent, never as markup. */
(function () {
  'use strict';
  // the data come gzip-packed in base64 (see packed() in html.py): inflated with the
  // browser's own DecompressionStream, then the page is built from them
  function inflate(id) {
    var el = document.getElementById(id);
    var b64 = el ? el.textContent.trim() : '';
    if (!b64) return Promise.resolve(null);
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text().then(function (text) { return JSON.parse(text); });
  }
  inflate('report-data').then(main).catch(function (err) { console.error(err); });

  function main(R) {
  var B36 = '0123456789abcdefghijklmnopqrstuvwxyz';
  var views = {};
  R.views.forEach(function (v) { views[v.id] = v; });
  var state = {rendered: {}, pending: {}, drillTask: {}, embeds: {}};

  function isNum(x) { return typeof x === 'number' && isFinite(x); }
  function pct(x) { return isNum(x) ? (100 * x).toFixed(1) + '%' : (x === 'inf' ? '\u221e' : '-'); }
  function usd(x) {
    if (x === 'inf') return '\u221e';
    if (!isNum(x)) return '-';
    var a = Math.abs(x);
    return '$' + (a >= 100 ? x.toFixed(0) : a >= 1 ? x.toFixed(2) : a >= 0.01 ? x.toFixed(4) : x.toPrecision(3));
  }
  var FMT = {
    pct: pct, usd: usd,
    int: function (x) { return isNum(x) ? Math.round(x).toLocaleString('en-US') : '-'; },
    num1: function (x) { return isNum(x) ? x.toFixed(1) : '-'; },
    num3: function (x) { return isNum(x) ? x.toFixed(3) : '-'; },
    pts: function (x) { return isNum(x) ? (x >= 0 ? '+' : '') + (100 * x).toFixed(1) : '-'; },
    p: function (x) { return isNum(x) ? (x < 0.001 ? x.toExponential(1) : x.toFixed(3)) : '-'; },
    bool: function (x) { return x === true ? 'yes' : x === false ? 'no' : '-'; },
    text: function (x) { return x === null || x === undefined ? '' : String(x); },
    name: function (x) { return x === null || x === undefined ? '-' : String(x); },
    task: function (x) { return x === null || x === undefined ? '-' : String(x); },
    path: function (x) { return x === null || x === undefined ? '-' : String(x); },
    mono: function (x) { return x === null || x === undefined ? '' : String(x); }
  };
  function fmt(col, row) {
    var f = FMT[col.fmt] || FMT.text;
    var text = f(row[col.field]);
    if (col.lo && (isNum(row[col.lo]) || isNum(row[col.hi]))) {
      return [text, '[' + f(row[col.lo]) + ', ' + f(row[col.hi]) + ']'];
    }
    return [text, null];
  }

  // --- tables -----------------------------------------------------------------------
  var LIMIT = 100;
  function sortValue(x) {
    if (x === 'inf') return Infinity;
    if (x === null || x === undefined || x === '') return null;
    return x;
  }
  function renderTable(view, rows, box) {
    box.textContent = '';
    var table = document.createElement('table');
    var thead = table.createTHead();
    var hr = thead.insertRow();
    var sort = box._sort || null;
    view.columns.forEach(function (col) {
      var th = document.createElement('th');
      th.className = ['name', 'task', 'text', 'path', 'mono'].indexOf(col.fmt) >= 0 ? 'name' : '';
      var b = document.createElement('button');
      b.type = 'button';
      b.textContent = col.title;
      b.addEventListener('click', function () {
        var dir = box._sort && box._sort.field === col.field && box._sort.dir === 1 ? -1 : 1;
        box._sort = {field: col.field, dir: dir};
        renderTable(view, rows, box);
      });
      th.appendChild(b);
      if (sort && sort.field === col.field) th.setAttribute('aria-sort', sort.dir === 1 ? 'ascending' : 'descending');
      hr.appendChild(th);
    });
    var shown = rows.slice();
    if (sort) {
      shown.sort(function (a, b) {
        var x = sortValue(a[sort.field]), y = sortValue(b[sort.field]);
        if (x === null && y === null) return 0;
        if (x === null) return 1;
        if (y === null) return -1;
        if (typeof x === 'number' && typeof y === 'number') return sort.dir * (x - y);
        return sort.dir * String(x).localeCompare(String(y));
      });
    }
    var all = box._all || shown.length <= LIMIT;
    var body = table.createTBody();
    (all ? shown : shown.slice(0, LIMIT)).forEach(function (row) {
      var tr = body.insertRow();
      if (row.tied) tr.className = 'tied';
      view.columns.forEach(function (col) {
        var td = tr.insertCell();
        td.className = col.field === 'tied' ? 'text tiedcell' : col.fmt;
        var parts = fmt(col, row);
        td.textContent = parts[0];
        if (parts[1]) {
          var s = document.createElement('span');
          s.className = 'ci';
          s.textContent = ' ' + parts[1];
          td.appendChild(s);
        }
        if (col.fmt === 'name' || col.fmt === 'path' || col.fmt === 'task') td.title = FMT.text(row[col.field]);
        if (col.tip && row[col.tip]) td.title = String(row[col.tip]);
        td.setAttribute('data-field', col.field);
        var raw = row[col.field];
        td.setAttribute('data-value', raw === null || raw === undefined ? '' : JSON.stringify(raw));
      });
    });
    box.appendChild(table);
    if (!all) {
      var more = document.createElement('button');
      more.type = 'button';
      more.className = 'more';
      more.textContent = 'show all ' + shown.length.toLocaleString('en-US') + ' rows';
      more.addEventListener('click', function () { box._all = true; renderTable(view, rows, box); });
      box.appendChild(more);
    }
  }

  // --- data of the big views ---------------------------------------------------------
  var heatCache = {};
  function heatRows(sid) {
    if (heatCache[sid]) return heatCache[sid];
    var h = R.heatmaps[sid], rows = [];
    for (var i = 0; i < h.agents.length; i++) {
      for (var j = 0; j < h.tasks.length; j++) {
        var row = {agent: h.agents[i], task: h.tasks[j], drift: !!(h.drift && h.drift[j])};
        if (h.binned) {
          var v = h.percent[i][j];
          row.rate = v < 0 ? null : v / 100; row.n = null;
        } else {
          var code = h.codes[i].substr(2 * j, 2);
          if (code === '--') { row.rate = null; row.n = 0; }
          else { var c = B36.indexOf(code[0]), n = B36.indexOf(code[1]); row.rate = c / n; row.n = n; }
        }
        rows.push(row);
      }
    }
    heatCache[sid] = rows;
    return rows;
  }
  // drill-down episodes come gzip-packed (see packed_drills in html.py)
  R.drills = {};
  var drillsReady = inflate('report-packed').then(function (d) {
    R.drills = d || {};
    setupPickers();
  });
  var OUTCOMES = ['failure', 'success', 'unknown'];
  function drillRows(sid, task) {
    var d = R.drills[sid], out = [];
    if (!d || !d.tasks.length) return out;
    var ep = d.episodes;
    function look(list, code) { return code ? list[code - 1] : null; }
    for (var i = d.offsets[task]; i < d.offsets[task + 1]; i++) {
      out.push({agent: d.groups[ep.a[i]], attempt: ep.n[i], outcome: OUTCOMES[ep.o[i]],
        reward: ep.r[i], error: look(d.errors, ep.e[i]), tokens: ep.k[i], cost: ep.c[i],
        time: ep.w[i], source: look(d.sources, ep.s[i]), text: look(d.texts, ep.x[i]),
        input: ep.p ? look(d.inputs, ep.p[i]) : null,
        target: ep.g ? look(d.targets, ep.g[i]) : null});
    }
    return out;
  }
  function taskRows(sid) {
    var rows = heatRows(sid), by = {}, order = [];
    rows.forEach(function (r) {
      var t = by[r.task];
      if (!t) { t = by[r.task] = {task: r.task, sum: 0, known: 0, missing: 0, drift: r.drift}; order.push(t); }
      if (r.rate === null) t.missing += 1; else { t.sum += r.rate; t.known += 1; }
    });
    return order.map(function (t) {
      return {task: t.task, rate: t.known ? t.sum / t.known : null, known: t.known,
              missing: t.missing, drift: t.drift};
    });
  }
  function tableRowsOf(view) { return view.heatmap ? taskRows(view.section) : rowsOf(view); }
  // the paired matrix: one row per pair in the table, both triangles in the chart
  // (pair_cells in specs.py is the same expansion)
  var OTHER = {'row better': 'column better', 'column better': 'row better'};
  function neg(x) { return isNum(x) ? -x : null; }
  function chartRowsOf(view) {
    var rows = rowsOf(view);
    if (!view.mirror) return rows;
    var out = [];
    rows.forEach(function (r) {
      out.push(r);
      var m = {};
      Object.keys(r).forEach(function (k) { m[k] = r[k]; });
      m.a = r.b; m.b = r.a; m.ai = r.bi; m.bi = r.ai;
      m.diff = neg(r.diff); m.low = neg(r.high); m.high = neg(r.low);
      m.verdict = OTHER[r.verdict] || r.verdict;
      m.label = isNum(r.diff) ? ((-r.diff >= 0 ? '+' : '') + Math.round(-100 * r.diff)) : '';
      if (m.label === '-0') m.label = '+0';
      out.push(m);
    });
    return out;
  }
  function rowsOf(view) {
    if (view.heatmap) return heatRows(view.section);
    if (view.drill) return drillRows(view.section, state.drillTask[view.section] || 0);
    return view.rows || [];
  }

  // --- charts ------------------------------------------------------------------------
  // labels beside points (cost vs success): keep a label only if it overlaps none kept
  // before it; they come in priority order (the frontier first), the rest stay hidden
  // (the point and its tooltip still name the agent)
  function deoverlap(el) {
    var kept = [];
    el.querySelectorAll('svg g.mark-text text').forEach(function (t) {
      t.removeAttribute('visibility');
      var r = t.getBoundingClientRect();
      if (!r.width) return;
      var hit = kept.some(function (k) {
        return r.left < k.right && k.left < r.right && r.top < k.bottom && k.top < r.bottom;
      });
      if (hit) t.setAttribute('visibility', 'hidden'); else kept.push(r);
    });
  }
  function embed(view) {
    var el = document.getElementById('chart-' + view.id);
    if (!el || !view.spec) return Promise.resolve();
    var spec = JSON.parse(JSON.stringify(view.spec));
    spec.datasets = {rows: chartRowsOf(view)};
    var opts = {actions: false, renderer: view.heatmap ? 'canvas' : 'svg', mode: 'vega-lite'};
    if (state.embeds[view.id]) { state.embeds[view.id].finalize(); }
    var p = window.vegaEmbed(el, spec, opts).then(function (res) {
      state.embeds[view.id] = res;
      if (view.deoverlap) {
        deoverlap(el);
        res.view.addResizeListener(function () { setTimeout(function () { deoverlap(el); }, 0); });
      }
      el.setAttribute('data-rendered', '1');
      if (view.heatmap && !R.heatmaps[view.section].binned) {
        res.view.addEventListener('click', function (evt, item) {
          if (item && item.datum && item.datum.task !== undefined) selectTask(view.section, item.datum.task);
        });
      }
      return res;
    }).catch(function (err) {
      el.className += ' failed';
      el.textContent = 'This chart could not be drawn: ' + String(err && err.message || err);
      console.error(err);
    });
    return p;
  }
  function render(id) {
    if (state.rendered[id]) return state.pending[id];
    state.rendered[id] = true;
    var view = views[id];
    var box = document.getElementById('table-' + id);
    var ready = view.drill ? drillsReady : Promise.resolve();
    state.pending[id] = ready.then(function () {
      if (box) renderTable(view, tableRowsOf(view), box);
      return embed(view);
    });
    return state.pending[id];
  }
  function renderAll() {
    return Promise.all(R.views.map(function (v) { return render(v.id); }));
  }
  window.evalatlasRenderAll = renderAll;

  // --- drill-down ----------------------------------------------------------------------
  function selectTask(sid, name) {
    var d = R.drills[sid];
    if (!d) return;
    var idx = d.tasks.indexOf(name);
    if (idx < 0) return;
    var sel = document.getElementById('pick-' + sid);
    if (sel) sel.value = String(idx);
    showTask(sid, idx);
    var v = views[sid + '-drill'];
    if (v) document.getElementById(v.id).scrollIntoView({behavior: 'smooth'});
  }
  function showTask(sid, idx) {
    state.drillTask[sid] = idx;
    var full = document.getElementById('task-' + sid);
    if (full && R.drills[sid]) full.textContent = R.drills[sid].tasks[idx] || '';
    var v = views[sid + '-drill'];
    if (!v) return;
    var box = document.getElementById('table-' + v.id);
    box._all = false; box._sort = null;
    renderTable(v, rowsOf(v), box);
    if (state.rendered[v.id]) state.pending[v.id] = embed(v);
  }
  function setupPickers() {
    Object.keys(R.drills).forEach(function (sid) {
      var sel = document.getElementById('pick-' + sid);
      if (!sel) return;
      R.drills[sid].tasks.forEach(function (t, i) {
        var o = document.createElement('option');
        o.value = String(i);
        o.textContent = t;
        sel.appendChild(o);
      });
      sel.addEventListener('change', function () { showTask(sid, parseInt(sel.value, 10)); });
      var full = document.getElementById('task-' + sid);
      if (full) full.textContent = R.drills[sid].tasks[0] || '';
    });
  }

  // --- downloads -----------------------------------------------------------------------
  function csvCell(x) {
    if (x === null || x === undefined) return '';
    var s = typeof x === 'object' ? JSON.stringify(x) : String(x);
    if (/^[=+\-@\t\r]/.test(s) && typeof x !== 'number') s = "'" + s;  // no spreadsheet formulas
    return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  function download(view, kind) {
    var rows = rowsOf(view), text, type;
    if (kind === 'json') {
      text = JSON.stringify(rows, null, 1); type = 'application/json';
    } else {
      var fields = [];
      rows.forEach(function (r) { Object.keys(r).forEach(function (k) { if (fields.indexOf(k) < 0) fields.push(k); }); });
      text = [fields.map(csvCell).join(',')].concat(rows.map(function (r) {
        return fields.map(function (f) { return csvCell(r[f]); }).join(',');
      })).join('\r\n') + '\r\n';
      type = 'text/csv';
    }
    var a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([text], {type: type}));
    a.download = view.id.replace(/[^A-Za-z0-9_-]/g, '_') + '.' + kind;
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }
  document.addEventListener('click', function (evt) {
    var t = evt.target;
    if (t && t.getAttribute && t.getAttribute('data-download')) {
      download(views[t.getAttribute('data-view')], t.getAttribute('data-download'));
    }
  });

  // --- lazy drawing: what is on screen first, one view at a time, the rest as it scrolls
  // into view (drawing every chart at once would keep the first ones waiting) ----------
  if ('IntersectionObserver' in window) {
    var queue = [], busy = false;
    var near = function (el) {
      var r = el.getBoundingClientRect();
      return r.top < window.innerHeight + 300 && r.bottom > -300;
    };
    var io = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting) { io.unobserve(e.target); queue.push(e.target.id); }
      });
      pump();
    }, {rootMargin: '300px 0px'});
    var pump = function () {
      if (busy || !queue.length) return;
      var id = queue.shift(), el = document.getElementById(id);
      if (state.rendered[id]) { pump(); return; }
      if (!near(el)) { io.observe(el); pump(); return; }  // pushed down meanwhile
      busy = true;
      Promise.resolve(render(id)).then(function () {
        busy = false;
        setTimeout(pump, 0);
      });
    };
    R.views.forEach(function (v) { var el = document.getElementById(v.id); if (el) io.observe(el); });
    // then every other view, one at a time in page order while the reader reads: a
    // printed or saved page (which does not scroll) has every chart drawn
    var background = function () {
      if (busy) { setTimeout(background, 50); return; }
      var next = R.views.filter(function (v) { return !state.rendered[v.id]; })[0];
      if (!next) return;
      busy = true;
      Promise.resolve(render(next.id)).then(function () {
        busy = false;
        setTimeout(background, 0);
      });
    };
    if (document.readyState === 'complete') setTimeout(background, 300);
    else window.addEventListener('load', function () { setTimeout(background, 300); });
  } else {
    renderAll();
  }
  // printing draws everything at once (the browser asks before it lays out the pages)
  window.addEventListener('beforeprint', function () { renderAll(); });
  if (window.matchMedia) {
    var printing = window.matchMedia('print');
    var onPrint = function (e) { if (e.matches) renderAll(); };
    if (printing.addEventListener) printing.addEventListener('change', onPrint);
    else if (printing.addListener) printing.addListener(onPrint);
  }
  }
})();
