"""The widget's front end (an anywidget ES module): its controls drawn from the `controls` spec (checkboxes,
choices, numbers, text, a grid of head switches), each change written to `values` (the kernel reruns the model
and sends `figures`, `tables`, `texts`); figures drawn with plotly.js, which the module carries (run once per page).
Token text reaches the page only as text (textContent), never as HTML."""

WIDGET_JS = r"""
function loadPlotly() {
  if (!window.Plotly) { (0, eval)(PLOTLY_SOURCE); }  // global scope: plotly.js sets window.Plotly
  return window.Plotly;
}

function control(spec, values, set) {
  const box = document.createElement(spec.type === 'heads' ? 'div' : 'label');  // a label may not hold labels
  box.className = 'explorer-control';
  box.style.marginRight = '1em';
  const name = document.createElement('span');
  name.textContent = spec.label + ' ';
  box.appendChild(name);
  const value = values[spec.name];
  let input;
  if (spec.type === 'check') {
    input = document.createElement('input');
    input.type = 'checkbox';
    input.checked = !!value;
    input.addEventListener('change', () => set(spec.name, input.checked));
  } else if (spec.type === 'select') {
    input = document.createElement('select');
    for (const option of spec.options) {
      const o = document.createElement('option');
      o.value = String(option); o.textContent = String(option);
      if (String(option) === String(value)) o.selected = true;
      input.appendChild(o);
    }
    input.addEventListener('change', () => set(spec.name, input.value));
  } else if (spec.type === 'heads') {
    input = document.createElement('span');
    input.className = 'explorer-heads';
    const off = new Set((value || []).map((p) => p[0] + ',' + p[1]));
    for (let layer = 0; layer < spec.layers; layer++) {
      const row = document.createElement('div');
      for (let head = 0; head < spec.heads; head++) {
        const cell = document.createElement('label');
        const check = document.createElement('input');
        check.type = 'checkbox';
        check.checked = !off.has(layer + ',' + head);
        check.dataset.head = spec.name + ':' + layer + ',' + head;
        check.addEventListener('change', () => {
          const now = Array.from(input.querySelectorAll('input')).filter((c) => !c.checked)
            .map((c) => c.dataset.head.split(':').pop().split(',').map(Number));
          set(spec.name, now);
        });
        cell.appendChild(check);
        cell.appendChild(document.createTextNode('L' + layer + ' H' + head + ' '));
        row.appendChild(cell);
      }
      input.appendChild(row);
    }
  } else {
    input = document.createElement('input');
    input.type = spec.type === 'number' ? 'number' : 'text';
    input.style.width = spec.type === 'number' ? '4em' : '12em';
    input.value = value === null || value === undefined ? '' : String(value);
    input.addEventListener('change', () => set(spec.name, spec.type === 'number' ? Number(input.value) : input.value));
  }
  input.name = spec.name;
  box.appendChild(input);
  return box;
}

function table(spec) {
  const wrap = document.createElement('div');
  const title = document.createElement('b');
  title.textContent = spec.title;
  wrap.appendChild(title);
  const t = document.createElement('table');
  t.className = 'explorer-table';
  const head = t.createTHead().insertRow();
  for (const h of spec.headers) { const th = document.createElement('th'); th.textContent = String(h); head.appendChild(th); }
  const body = t.createTBody();
  for (const row of spec.rows) {
    const tr = body.insertRow();
    for (const cell of row) { tr.insertCell().textContent = cell === null ? '' : String(cell); }
  }
  wrap.appendChild(t);
  return wrap;
}

function render({ model, el }) {
  const Plotly = loadPlotly();
  el.classList.add('explorer-widget');
  const controls = document.createElement('div');
  controls.className = 'explorer-controls';
  const state = document.createElement('div');
  state.className = 'explorer-state';
  const error = document.createElement('div');
  error.className = 'explorer-error';
  error.style.color = '#b00020';
  const texts = document.createElement('div');
  const tables = document.createElement('div');
  tables.className = 'explorer-tables';
  const plots = document.createElement('div');
  plots.className = 'explorer-plots';
  el.append(controls, state, error, texts, tables, plots);

  const set = (name, value) => {
    model.set('values', { ...model.get('values'), [name]: value });
    model.save_changes();
  };
  const drawControls = () => {
    controls.replaceChildren(...model.get('controls').map((s) => control(s, model.get('values'), set)));
  };
  const drawOutputs = () => {
    error.textContent = model.get('error');
    state.textContent = model.get('busy') ? 'running…' : '';
    texts.replaceChildren(...model.get('texts').map((t) => {
      const p = document.createElement('p'); p.style.whiteSpace = 'pre-wrap'; p.textContent = t; return p;
    }));
    tables.replaceChildren(...model.get('tables').map(table));
    const figures = model.get('figures');
    while (plots.children.length > figures.length) plots.lastChild.remove();
    figures.forEach((json, i) => {
      let div = plots.children[i];
      if (!div) { div = document.createElement('div'); div.className = 'explorer-plot'; plots.appendChild(div); }
      const f = JSON.parse(json);
      Plotly.react(div, f.data, f.layout, f.config);
    });
    el.dataset.runs = String(model.get('runs'));
  };
  drawControls();
  drawOutputs();
  model.on('change:controls', drawControls);
  model.on('change:runs', drawOutputs);
  model.on('change:busy', () => { state.textContent = model.get('busy') ? 'running…' : ''; });
  model.on('change:error', () => { error.textContent = model.get('error'); });
}

export default { render };
"""
