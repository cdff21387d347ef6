/*
 * python-wasi-main.c — the entry points of the room's CPython. scripts/python-wasi.sh
 * links this file with CPython's libpython (built for wasm32-wasi from Debian's
 * source package) into python.wasm, a WASI reactor. It is guest code: it is not part
 * of libperi and never runs on the host. The room's side is src/room/python.c.
 *
 *   peri_py_init()        initialises the interpreter (no environment, no argv
 *                         parsing, stdlib under /usr/local/lib/python3.11, UTF-8,
 *                         unbuffered stdio, no bytecode writes) and imports the modules
 *                         most scripts use, so that the host's startup snapshot holds
 *                         them. 0, or -1 when the interpreter cannot start.
 *   (imports)             peri_capability.dispatch / reply: the room's capability ABI,
 *                         offered to scripts as the module `peri` (fetch, read_text,
 *                         write_text...) over the builtin `_peri_capability`.
 *   peri_py_alloc(n)      n bytes of guest memory for the host to copy a script into.
 *   peri_py_run(src, n)   runs the script as __main__ from "/main.py", like
 *                         `python3 main.py`, and leaves with proc_exit: 0; the
 *                         SystemExit code; 1 after an uncaught exception (traceback on
 *                         stderr). It never returns.
 *
 * Per-run state that the snapshot would otherwise freeze is renewed at the start of
 * each run: sys.argv and the random module's seed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>

#define EXPORT(name)     __attribute__((export_name(name)))
#define CAP_IMPORT(name) __attribute__((import_module("peri_capability"), import_name(name)))

/* The room's capability dispatch ABI (docs/python.md, "Capabilities"). */
CAP_IMPORT("dispatch")
int32_t peri_cap_dispatch(const char *op, size_t op_len, const char *arg, size_t arg_len,
                          const char *data, size_t data_len);
CAP_IMPORT("reply") int32_t peri_cap_reply(char *buf, size_t cap);

/* _peri_capability.dispatch(op: str, arg: str, data: bytes) -> (status, reply bytes) */
static PyObject *cap_dispatch(PyObject *self, PyObject *args) {
    (void)self;
    const char *op, *arg;
    Py_ssize_t op_len, arg_len;
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "s#s#y*", &op, &op_len, &arg, &arg_len, &data)) return NULL;
    int32_t st =
        peri_cap_dispatch(op, (size_t)op_len, arg, (size_t)arg_len, data.buf, (size_t)data.len);
    PyBuffer_Release(&data);
    int32_t n = peri_cap_reply(NULL, 0);
    if (n < 0) n = 0;
    PyObject *reply = PyBytes_FromStringAndSize(NULL, n);
    if (!reply) return NULL;
    if (n && peri_cap_reply(PyBytes_AS_STRING(reply), (size_t)n) != n) {
        Py_DECREF(reply);
        PyErr_SetString(PyExc_OSError, "capability reply changed while being read");
        return NULL;
    }
    return Py_BuildValue("(iN)", (int)st, reply);
}

static PyMethodDef CAP_METHODS[] = {
    {"dispatch", cap_dispatch, METH_VARARGS, "dispatch(op, arg, data) -> (status, reply)"},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef CAP_MODULE = {PyModuleDef_HEAD_INIT, .m_name = "_peri_capability",
                                        .m_size = -1, .m_methods = CAP_METHODS};
static PyObject *cap_init(void) {
    return PyModule_Create(&CAP_MODULE);
}

/* The `peri` module: the capability ABI for scripts. */
static const char PERI_MODULE[] =
    "\"\"\"Ask the host for work the room cannot do itself (docs/python.md).\"\"\"\n"
    "import _peri_capability as _c\n"
    "OK, REFUSED, FAILED, INVALID = 0, 1, 2, 3\n"
    "def dispatch(op, arg, data=b''):\n"
    "    st, reply = _c.dispatch(op, arg, data)\n"
    "    if st == OK:\n"
    "        return reply\n"
    "    msg = reply.decode('utf-8', 'replace')\n"
    "    if st == REFUSED:\n"
    "        raise PermissionError(msg)\n"
    "    if st == INVALID:\n"
    "        raise ValueError(msg)\n"
    "    raise OSError(msg)\n"
    "def fetch(url):\n"
    "    \"\"\"The body of an HTTP GET of url (bytes), under the session's network policy.\"\"\"\n"
    "    return dispatch('http.fetch', url)\n"
    "def read_bytes(path):\n"
    "    \"\"\"A workspace file under the run's lease (path relative to the workspace).\"\"\"\n"
    "    return dispatch('file.read', path)\n"
    "def read_text(path, encoding='utf-8'):\n"
    "    return read_bytes(path).decode(encoding)\n"
    "def write_bytes(path, data):\n"
    "    \"\"\"Writes a workspace file under the run's lease; the number of bytes.\"\"\"\n"
    "    return int(dispatch('file.write', path, bytes(data)))\n"
    "def write_text(path, text, encoding='utf-8'):\n"
    "    return write_bytes(path, text.encode(encoding))\n";

/* Creates module `peri` from PERI_MODULE and registers it in sys.modules. */
static int make_peri_module(void) {
    PyObject *m = PyImport_AddModule("peri"); /* borrowed */
    if (!m) return -1;
    PyObject *d = PyModule_GetDict(m);
    if (PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins()) < 0) return -1;
    PyObject *r = PyRun_String(PERI_MODULE, Py_file_input, d, d);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

/* Imported before the snapshot: what scripts reach for first. Missing ones (a module
 * the build lacks) are skipped. */
static const char PREIMPORT[] =
    "def _peri_preimport():\n"
    "    import importlib\n"
    "    for m in ('os', 'io', 're', 'json', 'math', 'cmath', 'collections', 'itertools',\n"
    "              'functools', 'operator', 'decimal', 'fractions', 'datetime', 'time',\n"
    "              'calendar', 'random', 'string', 'dataclasses', 'typing', 'enum',\n"
    "              'hashlib', 'hmac', 'zlib', 'binascii', 'base64', 'struct', 'heapq',\n"
    "              'bisect', 'copy', 'textwrap', 'statistics', 'traceback', 'linecache',\n"
    "              'unicodedata', 'pathlib', 'csv', 'contextlib', 'abc', 'types',\n"
    "              'weakref', 'pprint', 'array', 'fnmatch', 'glob', 'shlex', 'argparse',\n"
    "              'locale', 'codecs', 'numbers', 'secrets', 'uuid'):\n"
    "        try:\n"
    "            importlib.import_module(m)\n"
    "        except Exception:\n"
    "            pass\n"
    "_peri_preimport()\n"
    "del _peri_preimport\n";

EXPORT("peri_py_init") int peri_py_init(void) {
    PyPreConfig pre;
    PyPreConfig_InitIsolatedConfig(&pre);
    pre.utf8_mode = 1;
    PyStatus st = Py_PreInitialize(&pre);
    if (PyStatus_Exception(st)) return -1;

    if (PyImport_AppendInittab("_peri_capability", cap_init) < 0) return -1;
    PyConfig c;
    PyConfig_InitIsolatedConfig(&c);
    c.isolated = 0;
    c.safe_path = 1;
    c.site_import = 1;
    c.user_site_directory = 0;
    c.write_bytecode = 0;
    c.buffered_stdio = 0;
    c.install_signal_handlers = 0;
    c.pathconfig_warnings = 0;
    st = PyConfig_SetString(&c, &c.home, L"/usr/local");
    if (!PyStatus_Exception(st)) st = PyConfig_SetString(&c, &c.program_name, L"python3");
    if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&c);
    PyConfig_Clear(&c);
    if (PyStatus_Exception(st)) return -1;

    if (make_peri_module() < 0) {
        PyErr_Clear();
        return -1;
    }
    /* The preimports run in a scratch namespace, not in __main__. */
    PyObject *g = PyDict_New();
    if (!g) return -1;
    if (PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) < 0) {
        Py_DECREF(g);
        return -1;
    }
    PyObject *r = PyRun_String(PREIMPORT, Py_file_input, g, g);
    Py_DECREF(g);
    if (!r) {
        PyErr_Clear();
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

EXPORT("peri_py_alloc") void *peri_py_alloc(size_t n) {
    return malloc(n ? n : 1);
}

/* The status of the SystemExit being raised, as CPython's own top level computes it:
 * code None -> 0, an int -> it, anything else is printed to stderr -> 1. Clears it. */
static int system_exit_status(void) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    int rc = 0;
    PyObject *code = v ? PyObject_GetAttrString(v, "code") : NULL;
    if (!code) {
        PyErr_Clear();
    } else if (code == Py_None) {
        rc = 0;
    } else if (PyLong_Check(code)) {
        long n = PyLong_AsLong(code);
        if (n == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            n = -1;
        }
        rc = (int)n;
    } else {
        PyObject *err = PySys_GetObject("stderr"); /* borrowed */
        if (err && err != Py_None && PyFile_WriteObject(code, err, Py_PRINT_RAW) == 0)
            PyFile_WriteString("\n", err);
        PyErr_Clear();
        rc = 1;
    }
    Py_XDECREF(code);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    return rc;
}

/* Calls module.name() when the module is loaded; errors are cleared. */
static void call_if_loaded(const char *module, const char *name) {
    PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
    PyObject *m = mods ? PyDict_GetItemString(mods, module) : NULL;
    if (!m) return;
    PyObject *r = PyObject_CallMethod(m, name, NULL);
    if (!r) PyErr_Clear();
    Py_XDECREF(r);
}

static void flush(const char *stream) {
    PyObject *f = PySys_GetObject(stream); /* borrowed */
    if (!f || f == Py_None) return;
    PyObject *r = PyObject_CallMethod(f, "flush", NULL);
    if (!r) PyErr_Clear();
    Py_XDECREF(r);
}

/* Runs the script; the exit status. */
static int run(const char *src, size_t n) {
    PyObject *main = PyImport_AddModule("__main__"); /* borrowed */
    PyObject *d = main ? PyModule_GetDict(main) : NULL;
    if (!d) return 1;
    PyObject *argv = Py_BuildValue("[s]", "/main.py");
    if (!argv || PySys_SetObject("argv", argv) < 0) {
        Py_XDECREF(argv);
        return 1;
    }
    Py_DECREF(argv);
    call_if_loaded("random", "seed");
    PyObject *file = PyUnicode_FromString("/main.py");
    if (!file || PyDict_SetItemString(d, "__file__", file) < 0) {
        Py_XDECREF(file);
        return 1;
    }
    /* The source as bytes: compile() applies PEP 263 coding cookies and refuses NUL
     * bytes, as reading main.py would. */
    PyObject *bytes = PyBytes_FromStringAndSize(src, (Py_ssize_t)n);
    PyObject *builtins = PyEval_GetBuiltins(); /* borrowed */
    PyObject *compile = builtins ? PyDict_GetItemString(builtins, "compile") : NULL;
    PyObject *code = NULL;
    if (bytes && compile) {
        code = PyObject_CallFunction(compile, "OOsii", bytes, file, "exec", 0, 1);
        /* Tracebacks show the script's lines: CPython's own traceback printer reads
         * them from the file, linecache-based ones from the cache. The copy in the
         * room's in-memory "/" is the run's own (the room is fresh for every run). */
        FILE *f = fopen("/main.py", "wb");
        if (f) {
            fwrite(src, 1, n, f);
            fclose(f);
        }
        if (code) {
            PyObject *lc = PyImport_ImportModule("linecache");
            PyObject *text = PyUnicode_FromStringAndSize(src, (Py_ssize_t)n);
            if (!text) PyErr_Clear();
            PyObject *lines = text ? PyObject_CallMethod(text, "splitlines", "i", 1) : NULL;
            PyObject *cache = lc ? PyObject_GetAttrString(lc, "cache") : NULL;
            PyObject *entry =
                lines ? Py_BuildValue("(nOOO)", (Py_ssize_t)n, Py_None, lines, file) : NULL;
            if (!cache || !entry || PyDict_SetItem(cache, file, entry) < 0) PyErr_Clear();
            Py_XDECREF(entry);
            Py_XDECREF(cache);
            Py_XDECREF(lines);
            Py_XDECREF(text);
            Py_XDECREF(lc);
        }
    }
    Py_XDECREF(bytes);
    Py_DECREF(file);
    PyObject *res = code ? PyEval_EvalCode(code, d, d) : NULL;
    Py_XDECREF(code);
    int rc = 0;
    if (!res) {
        if (PyErr_ExceptionMatches(PyExc_SystemExit)) {
            rc = system_exit_status();
        } else {
            PyErr_Print(); /* the traceback, through sys.excepthook */
            rc = 1;
        }
    }
    Py_XDECREF(res);
    /* What Py_FinalizeEx would do that a script can see: atexit handlers (a
     * SystemExit there sets the status, as in CPython), then flushed streams. */
    PyObject *ax = PyImport_ImportModule("atexit");
    if (ax) {
        PyObject *r = PyObject_CallMethod(ax, "_run_exitfuncs", NULL);
        if (!r) PyErr_Clear();
        Py_XDECREF(r);
        Py_DECREF(ax);
    } else {
        PyErr_Clear();
    }
    flush("stdout");
    flush("stderr");
    return rc;
}

EXPORT("peri_py_run") void peri_py_run(const char *src, size_t n) {
    int rc = run(src, n);
    exit(rc & 0xff);
}
