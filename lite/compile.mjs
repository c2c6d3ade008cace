// Compile Python to bytecode with the browser's own Python (Pyodide, here in Node), as Pyodide's own packages come,
// so that the browser's Python imports it without compiling it again at every start (the sources stay, for
// tracebacks); the bytecode's hash of its source is never checked:
// - a wheel: each module's bytecode beside it in __pycache__;
// - Pyodide's standard library (python_stdlib.zip, which npm's Pyodide ships as sources only): each module's bytecode
//   beside it in the zip (`json/__init__.pyc`), where Python's zipimport looks for it.
// Usage: node lite/compile.mjs PYODIDE_DIR OUT_DIR (WHEEL | python_stdlib.zip)...  (lite/build.py runs it)
import { pathToFileURL } from "node:url";
import { basename, dirname, resolve } from "node:path";

const [pyodideDir, outDir, ...archives] = process.argv.slice(2);
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
const inputs = archives.map((archive) => `${mount(dirname(resolve(archive)))}/${basename(archive)}`);
pyodide.globals.set("inputs", pyodide.toPy(inputs));
pyodide.globals.set("out", out);
pyodide.runPython(`
import importlib.util, os, py_compile, shutil, sys, tempfile, zipfile

site = f"/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
stdlib = next(p for p in sys.path if p.endswith(".zip"))  # where the interpreter mounts python_stdlib.zip


def compiled(archive):
    """The archive (a wheel or the standard library's zip) with its modules' bytecode added; how many modules."""
    wheel = archive.endswith(".whl")
    work = tempfile.mkdtemp()
    with zipfile.ZipFile(archive) as z:
        z.extractall(work)
        names = z.namelist()
    added = []
    for name in names:
        if name.endswith(".py") and ".data/" not in name.split("/")[0] + "/":
            source = os.path.join(work, name)
            cached = importlib.util.cache_from_source(source) if wheel else source + "c"
            try:
                py_compile.compile(source, cfile=cached, dfile=f"{site if wheel else stdlib}/{name}", doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
            except py_compile.PyCompileError:
                continue  # not Python this interpreter reads (a template, a test's broken file): left as it is
            added.append(os.path.relpath(cached, work))
    with zipfile.ZipFile(f"{out}/{os.path.basename(archive)}", "w", zipfile.ZIP_DEFLATED) as z:
        for name in names + added:
            if not name.endswith("/"):
                z.write(os.path.join(work, name), name)
    shutil.rmtree(work)
    return len(added)


for path in inputs:
    print(os.path.basename(path), compiled(path), "modules compiled")
`);
