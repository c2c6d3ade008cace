// Compile wheels' Python to bytecode with the browser's own Python (Pyodide, here in Node), as Pyodide's own packages
// come: each module's bytecode beside it in __pycache__, not checked against its source's date, so the browser's
// Python imports it without compiling it again at every start (the source stays, for tracebacks).
// Usage: node lite/compile.mjs PYODIDE_DIR OUT_DIR WHEEL...  (lite/build.py runs it)
import { pathToFileURL } from "node:url";
import { basename, dirname, resolve } from "node:path";

const [pyodideDir, outDir, ...wheels] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(resolve(pyodideDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: resolve(pyodideDir) + "/" });
const mounts = new Map();
const mount = (folder) => {
  if (!mounts.has(folder)) {
    const at = `/mnt/${mounts.size}`;
    pyodide.FS.mkdirTree(at);
    pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: folder }, at);
    mounts.set(folder, at);
  }
  return mounts.get(folder);
};
const out = mount(resolve(outDir));
const inputs = wheels.map((wheel) => `${mount(dirname(resolve(wheel)))}/${basename(wheel)}`);
pyodide.globals.set("inputs", pyodide.toPy(inputs));
pyodide.globals.set("out", out);
pyodide.runPython(`
import importlib.util, os, py_compile, shutil, sys, tempfile, zipfile

site = f"/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
for wheel in inputs:
    work = tempfile.mkdtemp()
    with zipfile.ZipFile(wheel) as z:
        z.extractall(work)
        names = z.namelist()
    compiled = []
    for name in names:
        if name.endswith(".py") and ".data/" not in name.split("/")[0] + "/":
            source = os.path.join(work, name)
            cached = importlib.util.cache_from_source(source)
            try:
                py_compile.compile(source, cfile=cached, dfile=f"{site}/{name}", doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
            except py_compile.PyCompileError:
                continue  # not Python this interpreter reads (a template, a Python 2 file): left as it is
            compiled.append(os.path.relpath(cached, work))
    target = f"{out}/{os.path.basename(wheel)}"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for name in names + compiled:
            if not name.endswith("/"):
                z.write(os.path.join(work, name), name)
    shutil.rmtree(work)
    print(os.path.basename(wheel), len(compiled), "modules compiled")
`);
