// The HTML report's script: reads the JSON document the page carries and draws each model's verdict, evidence,
// tables and charts. Bundled at build time with the parts of Vega it uses (src/CMakeLists.txt), so the page
// needs no network. Charts are Vega specifications rendered as SVG.
import {extend} from 'vega-util';
import {transforms} from 'vega-dataflow';
import * as dataTransforms from 'vega-transforms';
import * as viewTransforms from 'vega-view-transforms';
import * as encodeTransforms from 'vega-encode';
import {parse} from 'vega-parser';
import {View} from 'vega-view';
import {version as vegaVersion} from 'vega/package.json';

// What vega's own index does: make the transforms the specs name available to the dataflow.
extend(transforms, dataTransforms, viewTransforms, encodeTransforms);

const FP16_MAX = 65504;

// ---- small DOM and number helpers ----

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === 'class') node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const count = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'));
const scientific = (x) => (x === null || x === undefined ? '–' : typeof x === 'string' ? x : x.toExponential(3));

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; ++unit; }
  return `${value.toFixed(unit ? 2 : 0)} ${units[unit]}`;
}

function table(headers, rows, numericFrom = 1) {
  const head = element('tr', {}, headers.map((h, i) => element('th', i >= numericFrom ? {class: 'num'} : {}, h)));
  const body = rows.map((row) => element('tr', row.attributes || {},
      row.cells.map((cell, i) => element('td', i >= numericFrom ? {class: 'num'} : {}, cell))));
  return element('table', {}, element('thead', {}, head), element('tbody', {}, body));
}

// ---- charts: Vega specifications ----

const pending = [];

function chart(spec, caption) {
  const holder = element('div', {class: 'chart'});
  const view = new View(parse({
    $schema: 'https://vega.github.io/schema/vega/v5.json',
    padding: 8, autosize: {type: 'fit-x', contains: 'padding'},
    config: {axis: {labelFontSize: 11, titleFontSize: 12, titleFontWeight: 500, gridColor: '#eaeef2',
                    labelOverlap: true},
             legend: {labelFontSize: 11, titleFontSize: 12}, title: {fontSize: 13, anchor: 'start'}},
    ...spec,
  }), {renderer: 'svg', container: holder, hover: true});
  pending.push(view.runAsync());
  return element('figure', {}, holder, caption ? element('figcaption', {}, caption) : null);
}

// Horizontal lines at the reference values (the rules' thresholds, fp16's max) over a chart's y scale.
function referenceMarks(dataName, scale, orient = 'y') {
  const along = orient === 'y' ? {x: {value: 0}, x2: {signal: 'width'}, y: {scale, field: 'value'}}
                               : {y: {value: 0}, y2: {signal: 'height'}, x: {scale, field: 'value'}};
  const text = orient === 'y' ? {x: {signal: 'width'}, y: {scale, field: 'value', offset: -3}, align: {value: 'right'}}
                              : {x: {scale, field: 'value', offset: 3}, y: {value: 0}, baseline: {value: 'top'}};
  return [
    {type: 'rule', name: 'reference-lines', from: {data: dataName},
     encode: {enter: {...along, stroke: {field: 'color'}, strokeDash: {value: [5, 3]}, strokeWidth: {value: 1.5}}}},
    {type: 'text', name: 'reference-labels', from: {data: dataName},
     encode: {enter: {...text, text: {field: 'label'}, fill: {field: 'color'}, fontSize: {value: 10}}}},
  ];
}

// The values a chart of `stat` is read against: every rule threshold on it, and fp16's max for magnitudes.
function references(model, stat) {
  const lines = new Map();
  for (const rule of model.verdict?.evidence || []) {
    for (const observation of rule.observations) {
      if (observation.stat === stat) lines.set(observation.threshold, `rule threshold ${observation.threshold}`);
    }
  }
  if (stat === 'abs_max') lines.set(FP16_MAX, 'fp16 max 65504');
  return [...lines].map(([value, label]) => ({value, label, color: value === FP16_MAX ? '#cf222e' : '#6e7781'}));
}

// The exponent histogram against fp16's zones: flushed to zero, subnormal, normal, overflow (bf16 holds them all).
function exponentChart(precision) {
  const bins = precision.exponents.map(([e, n]) => ({e, n}));
  if (!bins.length) return element('p', {class: 'sub'}, 'No finite non-zero value to chart.');
  const low = Math.min(-26, ...bins.map((b) => b.e)) - 1;
  const high = Math.max(17, ...bins.map((b) => b.e + 1)) + 1;
  const zones = [
    {from: low, to: -24, label: '0 in fp16', fill: '#ffebe9', row: 1},
    {from: -24, to: -14, label: 'fp16 subnormal', fill: '#fff8c5', row: 0},
    {from: -14, to: 16, label: 'fp16 normal', fill: '#dafbe1', row: 0},
    {from: 16, to: high, label: 'inf in fp16', fill: '#ffebe9', row: 1},
  ];
  return chart({
    width: 560, height: 220,
    title: 'Exponent histogram: values per binade [2^e, 2^(e+1))',
    data: [{name: 'bins', values: bins}, {name: 'zones', values: zones}],
    scales: [
      {name: 'x', type: 'linear', domain: [low, high], range: 'width', zero: false, nice: false},
      // Bars rise from 0.5 so a binade holding one value shows; headroom at the top keeps the zone labels clear.
      {name: 'y', type: 'log', domain: [0.5, 30 * Math.max(...bins.map((b) => b.n))], range: 'height', nice: false},
    ],
    axes: [
      {orient: 'bottom', scale: 'x', title: 'binary exponent e of 2^e', tickMinStep: 1},
      {orient: 'left', scale: 'y', title: 'values (log scale)', grid: true, format: '~s', tickCount: 6},
    ],
    marks: [
      {type: 'rect', from: {data: 'zones'}, encode: {enter: {
        x: {scale: 'x', field: 'from'}, x2: {scale: 'x', field: 'to'}, y: {value: 0}, y2: {signal: 'height'},
        fill: {field: 'fill'}}}},
      {type: 'text', from: {data: 'zones'}, encode: {enter: {
        x: {scale: 'x', signal: '(datum.from + datum.to) / 2'}, y: {signal: '4 + 12 * datum.row'},
        align: {value: 'center'},
        baseline: {value: 'top'}, text: {field: 'label'}, fill: {value: '#59636e'}, fontSize: {value: 10}}}},
      {type: 'rect', name: 'exponent-bars', from: {data: 'bins'}, encode: {
        enter: {x: {scale: 'x', field: 'e', offset: 0.5}, x2: {scale: 'x', signal: 'datum.e + 1', offset: -0.5},
                y: {scale: 'y', field: 'n'}, y2: {scale: 'y', value: 0.5},
                description: {signal: "'2^' + datum.e + ': ' + datum.n"},
                tooltip: {signal: "{'binade': '[2^' + datum.e + ', 2^' + (datum.e + 1) + ')', 'values': format(datum.n, ',')}"}},
        update: {fill: {value: '#0969da'}}, hover: {fill: {value: '#bc4c00'}}}},
    ],
  }, 'fp16 keeps 2^-14 .. 65504 at full precision and 2^-24 .. 2^-14 as subnormals; bf16 keeps 2^-126 .. 3.4e38, ' +
     'the whole chart. Bars in the red zones are values fp16 turns into 0 or inf.');
}

// One dot per analyzed tensor, in file order, on a log scale against the rules and fp16's max.
function tensorAbsMaxChart(model) {
  const tensors = model.tensors.filter((t) => typeof t.abs_max === 'number' && t.abs_max > 0)
      // Buffers and optimizer state are coloured by their role: they are not among the groups' parameters.
      .map((t, i) => ({i, name: t.name, abs_max: t.abs_max, group: t.role === 'model' ? t.group : t.role, dtype: t.dtype}));
  if (!tensors.length) return element('p', {class: 'sub'}, 'No tensor with a non-zero abs max to chart.');
  return chart({
    width: 560, height: 240,
    title: 'abs max per tensor (log scale)',
    data: [{name: 'tensors', values: tensors}, {name: 'references', values: references(model, 'abs_max')}],
    scales: [
      {name: 'x', type: 'linear', domain: [0, Math.max(1, tensors.length - 1)], range: 'width', zero: false},
      {name: 'y', type: 'log', range: 'height', nice: true,
       domain: {fields: [{data: 'tensors', field: 'abs_max'}, {data: 'references', field: 'value'}]}},
      {name: 'group', type: 'ordinal', domain: {data: 'tensors', field: 'group', sort: true}, range: 'category'},
    ],
    axes: [
      {orient: 'bottom', scale: 'x', title: 'tensor (file order)', tickMinStep: 1, format: 'd'},
      {orient: 'left', scale: 'y', title: 'abs max', grid: true, format: '~g'},
    ],
    legends: [{fill: 'group', title: 'group or role', orient: 'right'}],
    marks: [
      {type: 'symbol', name: 'tensor-dots', from: {data: 'tensors'}, encode: {
        enter: {x: {scale: 'x', field: 'i'}, y: {scale: 'y', field: 'abs_max'}, fill: {scale: 'group', field: 'group'},
                size: {value: tensors.length > 400 ? 12 : 30}, opacity: {value: 0.85},
                description: {signal: "datum.name + ': ' + datum.abs_max"},
                tooltip: {signal: "{'tensor': datum.name, 'abs max': format(datum.abs_max, '.4~e'), 'dtype': datum.dtype}"}}}},
      ...referenceMarks('references', 'y'),
    ],
  }, `${tensors.length} tensors with a non-zero abs max. Dashed lines: the verdict's rule thresholds and fp16's max.`);
}

// Horizontal bars of one statistic per group, log scale, against its references.
function groupChart(model, stat, title) {
  const rows = Object.entries(model.summary.groups).filter(([, g]) => typeof g[stat] === 'number' && g[stat] > 0)
      .map(([group, g]) => ({group, value: g[stat], tensors: g.tensors}));
  if (!rows.length) return null;
  return chart({
    width: 360, height: Math.max(80, 26 * rows.length),
    title,
    data: [{name: 'rows', values: rows}, {name: 'references', values: references(model, stat)}],
    scales: [
      {name: 'y', type: 'band', domain: {data: 'rows', field: 'group'}, range: 'height', padding: 0.25},
      {name: 'x', type: 'log', range: 'width', nice: true,
       domain: {fields: [{data: 'rows', field: 'value'}, {data: 'references', field: 'value'}]}},
    ],
    axes: [{orient: 'left', scale: 'y'}, {orient: 'bottom', scale: 'x', grid: true, format: '~g', tickCount: 6}],
    marks: [
      {type: 'rect', name: 'group-bars', from: {data: 'rows'}, encode: {
        enter: {y: {scale: 'y', field: 'group'}, description: {signal: "datum.group + ': ' + datum.value"}, height: {scale: 'y', band: 1}, x: {scale: 'x', field: 'value'},
                x2: {signal: "scale('x', domain('x')[0])"},
                tooltip: {signal: "{'group': datum.group, 'value': format(datum.value, '.4~e'), 'tensors': datum.tensors}"}},
        update: {fill: {value: '#0969da'}}, hover: {fill: {value: '#bc4c00'}}}},
      ...referenceMarks('references', 'x', 'x'),
    ],
  });
}

// One line per stack of blocks (encoder.block, decoder.block, layers) over the block index.
function layerChart(model, stat, title) {
  const rows = model.summary.layers.filter((l) => typeof l[stat] === 'number' && l[stat] > 0)
      .map((l) => ({stack: l.stack, index: l.index, value: l[stat]}));
  if (!rows.length) return null;
  return chart({
    width: 360, height: 200,
    title,
    data: [{name: 'rows', values: rows}, {name: 'references', values: references(model, stat)}],
    scales: [
      {name: 'x', type: 'linear', domain: {data: 'rows', field: 'index'}, range: 'width', zero: false},
      {name: 'y', type: 'log', range: 'height', nice: true,
       domain: {fields: [{data: 'rows', field: 'value'}, {data: 'references', field: 'value'}]}},
      {name: 'stack', type: 'ordinal', domain: {data: 'rows', field: 'stack'}, range: 'category'},
    ],
    axes: [{orient: 'bottom', scale: 'x', title: 'block', tickMinStep: 1, format: 'd'},
           {orient: 'left', scale: 'y', grid: true, format: '~g', tickCount: 5}],
    legends: [{stroke: 'stack', title: 'stack', orient: 'bottom', direction: 'horizontal'}],
    marks: [
      {type: 'group', from: {facet: {name: 'stack_rows', data: 'rows', groupby: 'stack'}}, marks: [
        {type: 'line', from: {data: 'stack_rows'}, sort: {field: 'datum.index'}, encode: {enter: {
          x: {scale: 'x', field: 'index'}, y: {scale: 'y', field: 'value'}, stroke: {scale: 'stack', field: 'stack'},
          strokeWidth: {value: 2}}}},
        {type: 'symbol', name: 'block-dots', from: {data: 'stack_rows'}, encode: {enter: {
          description: {signal: "datum.stack + '.' + datum.index + ': ' + datum.value"},
          x: {scale: 'x', field: 'index'}, y: {scale: 'y', field: 'value'}, fill: {scale: 'stack', field: 'stack'},
          size: {value: 24},
          tooltip: {signal: "{'block': datum.stack + '.' + datum.index, 'value': format(datum.value, '.4~e')}"}}}},
      ]},
      ...referenceMarks('references', 'y'),
    ],
  });
}

// ---- the model section ----

// One fp16 risk reason in words (docs/json-schema.md, verdict.fp16_risk_reasons).
function riskReason(reason) {
  const where = reason.tensor ? ` ${reason.role === 'buffer' ? 'buffer' : 'parameter'} ${reason.tensor}` : '';
  if (reason.kind === 'range') {
    return `The parameters were learned wider than fp16 holds: rule ${reason.rule} fired (${scientific(reason.value)}` +
           `${where ? ` in${where}` : ''}).`;
  }
  if (reason.kind === 'documented' && reason.source) {
    return `Its fp16 failure is documented (${reason.rule}): ${reason.source}.`;
  }
  if (reason.kind === 'documented') {
    return `Documented as pretrained in bf16 (${reason.rule}): bf16-pretrained models learn activations beyond ` +
           `fp16's range even where their weights fit it.`;
  }
  if (reason.kind === 'activation') {
    return `A forward pass measured module ${reason.tensor} at ${scientific(reason.value)}, over fp16's 65504.`;
  }
  if (reason.kind === 'overflow') {
    return `Cast to fp16,${where} becomes inf: ${count(reason.values)} value(s) above 65504 (abs max ` +
           `${scientific(reason.value)}).`;
  }
  return `Cast to fp16,${where} flushes ${(100 * reason.value).toFixed(0)}% of its non-zero values ` +
         `(${count(reason.values)}) to zero.`;
}

// What to run the model in (docs/json-schema.md, verdict.advice): each tool's setting, and the keep list.
function adviceBlock(model) {
  const advice = model.verdict.advice;
  if (!advice) return null;
  const rows = advice.plans.map((plan) => ({cells: [plan.target.replace('_', '-'), plan.tool, plan.precision,
                                                    element('code', {}, plan.setting)]}));
  const keep = advice.keep_in_fp32.map((k) => element('li', {}, element('code', {}, k.module), ` (${k.basis}): ${k.why}`));
  return [element('h3', {}, `What to run it in, on ${advice.gpu.describes}`),
          element('p', {}, advice.why), table(['target', 'tool', 'precision', 'setting'], rows, 4),
          keep.length ? element('div', {}, element('p', {class: 'sub'}, 'Keep in fp32 when the rest runs in fp16:'),
                                element('ul', {}, keep)) : null];
}

// The CSS class of a label: its own for one precision, `open` for a two-label value such as fp16|fp32.
function labelClass(label) { return label.includes('|') ? 'open' : label; }

function verdictBlock(model) {
  const verdict = model.verdict;
  const risk = verdict.fp16_risk ? element('span', {class: 'badge risk'}, 'fp16 risk')
                                 : element('span', {class: 'badge safe'}, 'no fp16 risk found');
  const hints = [];
  if (verdict.hints?.config_dtype) hints.push(`config.json says ${verdict.hints.config_dtype}`);
  if (verdict.hints?.stored_dtypes?.length) hints.push(`stored as ${verdict.hints.stored_dtypes.join(', ')}`);
  const open = verdict.label.split('|');
  const others = verdict.candidates.filter((label) => !open.includes(label));
  return element('div', {class: 'verdict'},
      element('span', {class: `label ${labelClass(verdict.label)}`}, verdict.label),
      element('div', {}, element('div', {}, `confidence ${verdict.confidence.toFixed(2)} `, risk),
              element('div', {class: 'sub candidates'}, open.length > 1
                  ? `The evidence leaves ${open.join(' and ')} open: ` +
                    `${verdict.decided_by === 'ranges' ? 'weight ranges cannot tell them apart' : 'it cannot tell them apart'}.`
                  : others.length ? `The evidence does not rule out: ${others.join(', ')}.` : ''),
              element('div', {class: 'sub'}, verdict.decided_by === 'records'
                  ? 'Decided by what the training framework recorded (below), which outranks the weight ranges.'
                  : verdict.decided_by === 'documented'
                  ? 'Decided by the documented precision of a known model (below), which outranks the weight ranges.' : ''),
              element('ul', {class: 'conflicts'}, verdict.conflicts.map((c) => element('li', {class: 'warn'},
                  `Conflict (${c.kind}): ${c.detail}`))),
              element('ul', {class: 'risks'}, verdict.fp16_risk_reasons.map((r) => element('li', {}, riskReason(r)))),
              element('div', {class: 'sub'}, hints.length ? `hints (not proof): ${hints.join('; ')}` : '')));
}

// What the training framework wrote down: each record's source, what it gives, and on what basis.
function recordsTable(model) {
  if (!model.verdict.records.length) return null;
  const rows = model.verdict.records.map((record) => ({cells: [
    record.kind,
    element('span', {}, record.files.join(', '), element('div', {class: 'says'},
        record.fields.map((f) => `${f.key} = ${f.value}`).join(', '))),
    element('span', {}, record.basis, element('div', {class: 'says'}, `Describes ${record.describes}.`)),
    `${record.label} (${record.confidence})`,
  ]}));
  return [element('h3', {}, 'Training records (they outrank the ranges)'),
          table(['record', 'source', 'basis', 'gives'], rows, 4)];
}

// The registry entry that names the model or its base: what it documents, how it matched, and its source.
function documentedBlock(model) {
  const documented = model.verdict.documented;
  if (!documented) return null;
  const source = /^https?:\/\//.test(documented.source)
    ? element('a', {href: documented.source.split(' ')[0]}, documented.source) : documented.source;
  return [element('h3', {}, 'Documented precision (it outranks the ranges; records outrank it)'),
          element('p', {}, `${documented.id}: ${documented.precision}, grade ${documented.grade} ` +
                  `(${documented.confidence.toFixed(2)}), matched by ${documented.matched_by} (${documented.matched}). ` +
                  `Describes ${documented.describes}.`),
          element('p', {class: 'sub'}, 'Source: ', source,
                  documented.quote ? ` — "${documented.quote}"` : '')];
}

function evidenceTable(model) {
  const rows = model.verdict.evidence.map((rule) => ({
    attributes: rule.fired ? {class: 'fired'} : {},
    cells: [
      rule.fired ? '✔ fired' : '✘ not',
      element('span', {}, rule.rule, element('div', {class: 'says'}, rule.says),
              rule.basis ? element('div', {class: 'says'}, `Confidence: ${rule.basis}.`) : null),
      rule.observations.map((o) => `${o.stat} = ${scientific(o.observed)} ${o.op} ${o.threshold}`).join('; '),
      `${rule.candidates.join('|')} (${rule.confidence})`,
    ],
  }));
  return table(['rule', 'what it says', 'observed', 'gives'], rows, 4);
}

function numbersGrid(summary) {
  const cells = [
    ['abs min', scientific(summary.abs_min)], ['abs max', scientific(summary.abs_max)],
    ['norm min', scientific(summary.norm_min)], ['norm max', scientific(summary.norm_max)],
    ['parameters', count(summary.parameters)], ['tensors', count(summary.tensors)],
    ['NaN / Inf', `${count(summary.nans)} / ${count(summary.infs)}`],
  ];
  return element('div', {class: 'numbers'}, cells.map(([name, value]) => element('div', {}, element('b', {}, value),
                                                                           element('span', {}, name))));
}

function castTable(precision) {
  const formats = [['fp16', 'fp16 (max 65504)'], ['fp8_e4m3', 'fp8 E4M3 (max 448)'], ['fp8_e5m2', 'fp8 E5M2 (max 57344)']];
  const rows = formats.map(([key, name]) => ({cells: [name, count(precision[key].overflow),
                                                      count(precision[key].subnormal), count(precision[key].underflow)]}));
  return table(['cast to', 'overflow (inf)', 'subnormal', 'flush to zero'], rows);
}

function groupTable(model) {
  const rows = Object.entries(model.summary.groups).map(([name, g]) => ({cells: [
    name, count(g.tensors), count(g.parameters), scientific(g.abs_max), scientific(g.norm_max),
    count(g.precision.above_1e2), count(g.precision.fp16.overflow)]}));
  return table(['group', 'tensors', 'parameters', 'abs max', 'norm max', '> 1e2', 'fp16 overflow'], rows);
}

function censusTable(summary) {
  const rows = Object.entries(summary.census).map(([dtype, c]) => ({cells: [
    dtype, count(c.tensors), count(c.parameters), bytes(c.bytes)]}));
  const footprint = summary.footprint;
  return element('div', {}, table(['stored dtype', 'tensors', 'parameters', 'bytes'], rows),
      element('p', {class: 'sub'}, `Cast as a whole: fp32 ${bytes(footprint.fp32)}, fp16/bf16 ` +
          `${bytes(footprint.fp16_bf16)}, int8/fp8 ${bytes(footprint.int8_fp8)}.`));
}

function largestTensors(model, limit = 12) {
  const rows = model.tensors.filter((t) => typeof t.abs_max === 'number')
      .sort((a, b) => b.abs_max - a.abs_max).slice(0, limit)
      .map((t) => ({cells: [t.name, t.role === 'model' ? t.group : t.role, t.dtype, scientific(t.abs_max),
                            scientific(t.norm), count(t.precision.fp16.overflow)]}));
  return table(['tensor', 'group or role', 'dtype', 'abs max', 'L2 norm', 'fp16 overflow'], rows, 3);
}

// Buffers (running statistics, masks, position tables) are kept out of the verdict, not out of sight.
function buffersBlock(buffers) {
  if (!buffers.tensors) return null;
  return [element('h3', {}, 'Buffers (not in the verdict)'),
          element('p', {class: 'sub'}, `${count(buffers.tensors)} tensors, ${count(buffers.parameters)} values: ` +
              `abs max ${scientific(buffers.abs_max)} (${buffers.abs_max_tensor ?? '-'}), norm max ` +
              `${scientific(buffers.norm_max)}; ${count(buffers.precision.fp16.overflow)} value(s) overflow fp16. ` +
              'model.half() casts them too, so fp16 risk counts them.'),
          censusTable(buffers)];
}

// Safe to load? The verdict in words, and every import that is not on the allowlist (docs/security.md).
function safetyBlock(model) {
  const safety = model.safety;
  if (!safety) return null;
  const badge = {safe: 'safe', unsafe: 'error', unverified: 'risk'}[safety.verdict];
  const rows = safety.imports.filter((i) => i.class !== 'allowed').map((i) => ({
    attributes: i.class === 'dangerous' ? {class: 'fired'} : {},
    cells: [i.spelling ? [`${i.module}.${i.name}`, element('div', {class: 'sub'}, `written ${i.spelling}`)]
                       : `${i.module}.${i.name}`, i.class + (i.family ? ` (${i.family})` : ''), i.why ?? '',
            `${i.file} @ ${i.offset}`, i.called ? 'called' : 'imported'],
  }));
  return [element('h3', {}, 'Safe to load?'),
          element('p', {}, element('span', {class: `badge ${badge}`}, safety.verdict), ` ${safety.says}. `,
                  element('span', {class: 'sub'}, `${safety.files.length} file(s) examined; nothing was executed.`)),
          rows.length ? table(['global', 'class', 'why', 'where', 'use'], rows, 5) : null,
          element('ul', {}, (safety.tampering ?? []).map((t) => element(
              'li', {class: 'fired'}, `tampering (${t.kind}): ${t.detail} in ${t.file} @ ${t.offset}`))),
          element('ul', {}, (safety.custom_code ?? []).map((c) => element(
              'li', {class: c.consent === 'not_asked' ? 'fired' : 'warn'},
              `custom code${c.consent === 'not_asked' ? ' imported without consent' : ''}: ${c.file}` +
              `${c.classes.length ? ` (${c.classes.join(', ')})` : ''}` +
              (c.named_by ? `, named by ${c.named_by}` : '') + (c.why ? `: ${c.why}` : '')))),
          element('ul', {}, safety.unverified.map((u) => element('li', {class: 'warn'}, u))),
          inventoryBlock(model)];
}

// Every file of the input accounted to the model, with its disposition and verdict (docs/security.md#the-inventory):
// the files judged and those not read, and why.
function inventoryBlock(model) {
  const inventory = model.inventory;
  if (!inventory) return null;
  const counts = Object.entries(inventory.counts).map(([what, n]) => `${n} ${what.replace('_', ' ')}`).join(', ');
  const why = Object.entries(inventory.not_read).map(([what, n]) => `${n} ${what.replace('_', ' ')}`).join(', ');
  // The findings first; a folder of many files shows its first 200.
  const rank = (f) => ({unsafe: 0, unverified: 1}[f.verdict] ?? 2);
  const shown = [...inventory.files].sort((a, b) => rank(a) - rank(b)).slice(0, 200);
  const rows = shown.map((f) => ({
    attributes: f.verdict === 'unsafe' ? {class: 'fired'} : f.verdict === 'unverified' ? {class: 'warn'} : {},
    cells: [f.file + (f.link ? ` -> ${f.link}` : ''), f.disposition.replace('_', ' '), f.verdict ?? '', f.size ?? '',
            f.reason],
  }));
  return [element('p', {class: 'sub'}, `Files: ${counts}${why ? ` (not read: ${why})` : ''}` +
                  (inventory.unlisted ? `; ${inventory.unlisted} more not listed` : '') +
                  (shown.length < inventory.files.length ? `; the first ${shown.length} shown` : '') + '.'),
          table(['file', 'disposition', 'verdict', 'bytes', 'why'], rows, 10)];
}

function failedModel(model) {
  return element('section', {class: 'model', id: anchor(model)},
      element('h2', {}, model.input), element('span', {class: 'badge error'}, model.error.code),
      element('p', {class: 'warn'}, model.error.message), safetyBlock(model));
}

// --safety-only and --headers-only read no value: no statistic, no verdict, the safety and what was read.
function tierName(model) { return model.headers_read ? 'headers only' : 'safety only'; }

function modelWithoutValues(model) {
  return element('section', {class: 'model', id: anchor(model)},
      element('h2', {}, model.input), element('span', {class: 'badge'}, tierName(model)),
      element('p', {class: 'sub'}, `${model.format}, ${model.files.length} file(s): ${model.path}; ` +
          'no tensor value was read, so no statistic and no precision verdict.'),
      model.warnings.map((w) => element('p', {class: 'warn'}, w.message)),
      model.gate_failures.map((g) => element('p', {class: 'warn'}, `gate failed: ${g}`)),
      safetyBlock(model));
}

function modelSection(model) {
  if (model.error) return failedModel(model);
  if (!model.values_read) return modelWithoutValues(model);
  const {summary} = model;
  const notes = [...model.warnings.map((w) => element('p', {class: 'warn'}, w.message)),
                 ...model.gate_failures.map((g) => element('p', {class: 'warn'}, `gate failed: ${g}`))];
  if (model.storage_cast) notes.push(element('p', {class: 'note'}, `Storage cast: ${model.storage_cast.says}`));
  const layered = summary.layers.length > 1;
  return element('section', {class: 'model', id: anchor(model)},
      element('h2', {}, model.input),
      element('p', {class: 'sub'}, `${model.format}, ${model.files.length} file(s): ${model.path}`),
      verdictBlock(model), adviceBlock(model), numbersGrid(summary), notes,
      recordsTable(model), documentedBlock(model), safetyBlock(model),
      element('h3', {}, 'Range evidence'), evidenceTable(model),
      element('h3', {}, 'Will it fit fp16?'),
      element('div', {class: 'charts'}, exponentChart(summary.precision), tensorAbsMaxChart(model)),
      castTable(summary.precision),
      element('p', {class: 'sub'}, `${count(summary.precision.above_1e2)} values above 1e2 (the threshold of stas00's notebook), ` +
          `${count(summary.precision.square_overflow)} at or above 256 (their square overflows fp16).`),
      element('h3', {}, 'Groups'),
      element('div', {class: 'charts'}, groupChart(model, 'abs_max', 'abs max per group (log scale)'),
              groupChart(model, 'norm_max', 'largest L2 norm per group (log scale)')),
      groupTable(model),
      layered ? [element('h3', {}, 'Blocks'),
                 element('div', {class: 'charts'}, layerChart(model, 'abs_max', 'abs max per block'),
                         layerChart(model, 'norm_max', 'largest L2 norm per block'))] : null,
      element('h3', {}, 'Largest tensors'), largestTensors(model),
      element('h3', {}, 'Census (parameters)'), censusTable(summary),
      buffersBlock(model.buffers));
}

// ---- the page ----

function anchor(model) { return `model-${model.index}`; }

function overview(models) {
  const rows = models.map((m) => ({cells: m.error || !m.values_read ? [
    element('a', {href: `#${anchor(m)}`}, m.input),
    m.error ? element('span', {class: 'badge error'}, 'error') : element('span', {class: 'badge'}, tierName(m)),
    '', '', '', ''] : [
    element('a', {href: `#${anchor(m)}`}, m.input),
    element('span', {class: `badge ${labelClass(m.verdict.label)}`},
            `${m.verdict.label} ${m.verdict.confidence.toFixed(2)}`),
    m.verdict.fp16_risk ? element('span', {class: 'badge risk'}, 'fp16 risk') : 'no',
    scientific(m.summary.abs_max), scientific(m.summary.norm_max), count(m.summary.parameters)]}));
  return element('section', {class: 'model'}, element('h2', {}, 'Models'),
      table(['model', 'verdict', 'fp16 risk', 'abs max', 'norm max', 'parameters'], rows, 3));
}

function headline(models) {
  // The labels as the document spells them (C++ defines them once: core/label.h), in order of first appearance.
  const classified = models.filter((m) => m.verdict);
  const present = [...new Set(classified.map((m) => m.verdict.label))];
  const labels = present.map((label) => `${label} ${classified.filter((m) => m.verdict.label === label).length}`);
  const failed = models.filter((m) => m.error).length;
  return `${models.length} model(s) scanned: ${labels.join(', ') || 'none classified'}` +
         (failed ? `; ${failed} could not be scanned` : '');
}

function documentBlock(text) {
  const url = URL.createObjectURL(new Blob([text], {type: 'application/json'}));
  return element('details', {}, element('summary', {}, 'The JSON document this page was drawn from'),
      element('p', {}, element('a', {href: url, download: 'precdetect.json'}, 'Download it'),
              ' (schema: docs/json-schema.md).'),
      element('pre', {class: 'document'}, JSON.stringify(JSON.parse(text), null, 2)));
}

function render() {
  const text = document.getElementById('precdetect-document').textContent;
  const scan = JSON.parse(text);
  const models = scan.models.map((m, index) => ({...m, index}));
  document.getElementById('headline').textContent = headline(models);
  const main = document.getElementById('report');
  if (models.length > 1) main.append(overview(models));
  for (const model of models) main.append(modelSection(model));
  main.append(documentBlock(text));
  document.getElementById('footer').textContent =
      `${scan.tool.name} ${scan.tool.version}, JSON schema ${scan.schema_version}. Charts by Vega ${vegaVersion} ` +
      '(© 2015-2021 UW Interactive Data Lab, BSD-3-Clause) with d3 modules (© 2010-2021 Mike Bostock, ISC), ' +
      'inlined from Debian\'s node-vega; licence texts in precdetect\'s docs/third-party.md.';
  // Tests and scripted readers wait for this attribute: every chart has been drawn.
  Promise.all(pending).then(() => { document.body.dataset.rendered = String(pending.length); },
                            (error) => { console.error('precdetect report: a chart failed:', error); });
}

render();
