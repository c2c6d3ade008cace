// The browser edition's Python started in Node, with no browser and no JupyterLab: the floor under the site's start
// (benchmarks/bench_lite.py runs it). The kernel's own steps, in its order: Pyodide boots (the WebAssembly
// interpreter and its standard library), the site's preloaded wheels are unpacked, the kernel is imported (IPython
// with it), then chapter 1's first cell's imports. Prints one JSON object: each phase's end, wall and CPU seconds.
// Usage: node benchmarks/lite_boot.mjs SITE_PYODIDE_DIR PACKAGES_JSON IMPORTS_JSON
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const dir = resolve(process.argv[2]) + "/";
const [packages, imports] = process.argv.slice(3, 5).map((text) => JSON.parse(text));
const began = performance.now();
const ends = {};
const end = (phase) => {
  const cpu = process.cpuUsage();
  ends[phase] = { wall: (performance.now() - began) / 1000, cpu: (cpu.user + cpu.system) / 1e6 };
};
const { loadPyodide } = await import(pathToFileURL(dir + "pyodide.mjs").href);
const pyodide = await loadPyodide({ indexURL: dir, stdout: () => {}, stderr: () => {} });
end("pyodide");
await pyodide.loadPackage(packages, { messageCallback: () => {} });
end("packages");
pyodide.runPython("import piplite.piplite, pyodide_kernel");
end("kernel");
pyodide.runPython(imports.map((name) => `import ${name}`).join("\n"));
end("first cell");
console.log(JSON.stringify(ends));
