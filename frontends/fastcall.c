/* Repeated kernel calls in C: frontends/fastcall.py builds this CPython extension once per
   Python, numpy and compiler. Two kinds of prepared call, each calling the packed C entry
   every cpu kernel exports (backends/clike/entry.py):
   - Stub: the Halide front-end's realize(sizes, inputs, out) with preallocated outputs
     (frontends/halide/prepared.py), one per prepared call;
   - ArgsStub: the Julia front-end's call with positional arguments (frontends/julia/api.py),
     one per compiled specialization.

   Why C: the checks of a repeated call cost 5 us in Python on a warm interpreter and
   60-100 us after a kernel has streamed a large image through the caches (every bytecode,
   object and dict they touch is then a miss); here they read a few words of each
   argument. A stub makes exactly the checks of the Python path it stands for, on the same
   data; anything it does not handle returns `miss` and the caller takes the Python path,
   whose answers and errors are the ones users see. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int (*packed_entry)(const int64_t *);

#define MAX_WORDS 256  /* the most arguments a stub takes (more: no stub, the Python path) */

/* One array argument the call checks: where its data address goes among the entry's
   words, and what it must look like. */
typedef struct {
    Py_ssize_t slot;         /* index among the entry's words (params first) */
    Py_ssize_t index;        /* ArgsStub: the argument's position */
    int writes;              /* the kernel writes it: it must be writeable */
    int check_strides;       /* inputs: the strides must be these */
    int ndim;
    npy_intp shape[NPY_MAXDIMS];
    npy_intp strides[NPY_MAXDIMS];
    PyArray_Descr *dtype;    /* owned */
    PyObject *name;          /* Stub's inputs: the input's name (owned) */
} ArraySpec;

typedef struct {
    PyObject *name;   /* owned */
    PyObject *type;   /* owned: int, bool or float exactly */
    PyObject *value;  /* owned */
} ScalarSpec;

/* What both kinds of stub keep of the kernel call itself. */
typedef struct {
    Py_ssize_t nwords, nparams;  /* the entry's words: params, then one per array */
    Py_ssize_t narrays;
    int64_t *fixed;              /* the words every call passes (0 where a call fills) */
    int64_t *nbytes;             /* per array argument */
    Py_ssize_t npairs;
    Py_ssize_t *pairs;           /* array arguments that must not overlap, two by two */
    packed_entry entry;
    PyObject *on_error;          /* called with a failing status; raises */
    PyObject *miss;              /* what a call that does not match returns */
    PyObject *keep;              /* what the words' fixed addresses point into */
} Call;

static void spec_clear(ArraySpec *a, Py_ssize_t n) {
    for (Py_ssize_t i = 0; a != NULL && i < n; i++) {
        Py_XDECREF(a[i].dtype);
        Py_XDECREF(a[i].name);
    }
    PyMem_Free(a);
}

/* int64 values of a tuple of ints into a fresh array of n (the tuple's length). */
static int64_t *int64s(PyObject *t, Py_ssize_t *n, const char *what) {
    if (!PyTuple_Check(t)) {
        PyErr_Format(PyExc_TypeError, "fastcall: %s must be a tuple of ints", what);
        return NULL;
    }
    *n = PyTuple_GET_SIZE(t);
    int64_t *v = PyMem_Calloc(*n > 0 ? (size_t)*n : 1, sizeof(int64_t));
    if (v == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
        if (v[i] == -1 && PyErr_Occurred()) {
            PyMem_Free(v);
            return NULL;
        }
    }
    return v;
}

/* Pairs of Py_ssize_t from a tuple of 2-tuples, the first below below_a, the second
   below below_b. */
static Py_ssize_t *index_pairs(PyObject *t, Py_ssize_t *n, Py_ssize_t below_a,
                               Py_ssize_t below_b, const char *what) {
    *n = PyTuple_GET_SIZE(t);
    Py_ssize_t *v = PyMem_Calloc(*n > 0 ? 2 * (size_t)*n : 1, sizeof(Py_ssize_t));
    if (v == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(t, i), "nn", &v[2 * i], &v[2 * i + 1]))
            goto fail;
        if (v[2 * i] < 0 || v[2 * i] >= below_a || v[2 * i + 1] < 0 ||
            v[2 * i + 1] >= below_b) {
            PyErr_Format(PyExc_ValueError, "fastcall: %s entry %zd out of range", what, i);
            goto fail;
        }
    }
    return v;
fail:
    PyMem_Free(v);
    return NULL;
}

/* Fill `c` (zeroed) from a stub constructor's arguments; -1 with an exception set. */
static int call_init(Call *c, PyObject *fixed, Py_ssize_t nparams, PyObject *nbytes,
                     PyObject *pairs, unsigned long long entry, PyObject *on_error,
                     PyObject *miss, PyObject *keep) {
    if (entry == 0 || !PyCallable_Check(on_error)) {
        PyErr_SetString(PyExc_ValueError, "fastcall: no entry, or on_error not callable");
        return -1;
    }
    c->nparams = nparams;
    c->entry = (packed_entry)(uintptr_t)entry;
    Py_INCREF(on_error);
    c->on_error = on_error;
    Py_INCREF(miss);
    c->miss = miss;
    Py_INCREF(keep);
    c->keep = keep;
    if ((c->fixed = int64s(fixed, &c->nwords, "fixed")) == NULL ||
        (c->nbytes = int64s(nbytes, &c->narrays, "nbytes")) == NULL)
        return -1;
    if (nparams < 0 || nparams + c->narrays != c->nwords || c->nwords > MAX_WORDS) {
        PyErr_SetString(PyExc_ValueError, "fastcall: params and arrays do not add up");
        return -1;
    }
    if (!PyTuple_Check(pairs)) {
        PyErr_SetString(PyExc_TypeError, "fastcall: pairs must be a tuple");
        return -1;
    }
    c->pairs = index_pairs(pairs, &c->npairs, c->narrays, c->narrays, "pairs");
    return c->pairs == NULL ? -1 : 0;
}

static void call_clear(Call *c) {
    PyMem_Free(c->fixed);
    PyMem_Free(c->nbytes);
    PyMem_Free(c->pairs);
    Py_XDECREF(c->on_error);
    Py_XDECREF(c->miss);
    Py_XDECREF(c->keep);
}

/* Whether two arguments that must not overlap do (the ordinary path then says so). */
static int call_overlaps(const Call *c, const int64_t *words) {
    const int64_t *addr = words + c->nparams;
    for (Py_ssize_t k = 0; k < c->npairs; k++) {
        Py_ssize_t i = c->pairs[2 * k], j = c->pairs[2 * k + 1];
        if (addr[i] < addr[j] + c->nbytes[j] && addr[j] < addr[i] + c->nbytes[i])
            return 1;
    }
    return 0;
}

/* Run the kernel on `words` without the GIL (as ctypes calls it); 0, or -1 with the
   kernel's own error raised (on_error) for a failing status. */
static int call_run(const Call *c, const int64_t *words) {
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = c->entry(words);
    Py_END_ALLOW_THREADS
    if (rc == 0)
        return 0;
    PyObject *r = PyObject_CallFunction(c->on_error, "i", rc);
    if (r != NULL) {
        Py_DECREF(r);
        PyErr_Format(PyExc_RuntimeError, "the kernel returned status %d", rc);
    }
    return -1;
}

/* Whether `a` is exactly an ndarray of spec's shape and dtype. */
static int same_array(PyObject *a, const ArraySpec *spec) {
    if (Py_TYPE(a) != &PyArray_Type)
        return 0;
    PyArrayObject *arr = (PyArrayObject *)a;
    if (PyArray_NDIM(arr) != spec->ndim)
        return 0;
    npy_intp *shape = PyArray_DIMS(arr);
    for (int d = 0; d < spec->ndim; d++)
        if (shape[d] != spec->shape[d])
            return 0;
    return PyArray_DESCR(arr) == spec->dtype || PyArray_EquivTypes(PyArray_DESCR(arr),
                                                                   spec->dtype);
}

/* Whether `a` is an argument as spec describes it (an input: its strides too; written:
   writeable; always aligned), and if so its address into words. */
static int take_array(PyObject *a, const ArraySpec *spec, int64_t *words) {
    if (!same_array(a, spec) || !PyArray_ISALIGNED((PyArrayObject *)a) ||
        (spec->writes && !PyArray_ISWRITEABLE((PyArrayObject *)a)))
        return 0;
    if (spec->check_strides) {
        npy_intp *strides = PyArray_STRIDES((PyArrayObject *)a);
        for (int d = 0; d < spec->ndim; d++)
            if (strides[d] != spec->strides[d])
                return 0;
    }
    words[spec->slot] = (int64_t)(intptr_t)PyArray_DATA((PyArrayObject *)a);
    return 1;
}

/* One ArraySpec from (dtype, slot, shape, strides or None, writes), slot within
   [lo, nwords). */
static int parse_spec(ArraySpec *a, PyObject *dtype, Py_ssize_t slot, PyObject *shape,
                      PyObject *strides, int writes, Py_ssize_t lo, Py_ssize_t nwords) {
    Py_ssize_t nd = PyTuple_GET_SIZE(shape);
    int with_strides = strides != Py_None;
    if (slot < lo || slot >= nwords || nd > NPY_MAXDIMS ||
        (with_strides && (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != nd))) {
        PyErr_SetString(PyExc_ValueError, "fastcall: a malformed array entry");
        return -1;
    }
    a->slot = slot;
    a->writes = writes;
    a->check_strides = with_strides;
    a->ndim = (int)nd;
    Py_INCREF(dtype);
    a->dtype = (PyArray_Descr *)dtype;
    for (Py_ssize_t d = 0; d < nd; d++) {
        a->shape[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
        if (with_strides)
            a->strides[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, d));
    }
    return PyErr_Occurred() ? -1 : 0;
}

static ArraySpec *new_specs(PyObject *t, Py_ssize_t *n) {
    *n = PyTuple_GET_SIZE(t);
    ArraySpec *a = PyMem_Calloc(*n > 0 ? (size_t)*n : 1, sizeof(ArraySpec));
    if (a == NULL)
        PyErr_NoMemory();
    return a;
}

/* -------------------------------------------------------------------- Stub */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Py_ssize_t nsizes;
    int64_t *sizes;
    Py_ssize_t nimages, nscalars, nouts;
    ArraySpec *images, *outs;
    ScalarSpec *scalars;
    int out_list;
    Call call;
} Stub;

static void stub_dealloc(Stub *s) {
    spec_clear(s->images, s->nimages);
    spec_clear(s->outs, s->nouts);
    for (Py_ssize_t i = 0; s->scalars != NULL && i < s->nscalars; i++) {
        Py_XDECREF(s->scalars[i].name);
        Py_XDECREF(s->scalars[i].type);
        Py_XDECREF(s->scalars[i].value);
    }
    PyMem_Free(s->scalars);
    PyMem_Free(s->sizes);
    call_clear(&s->call);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

/* (name or None, dtype, slot, shape, strides or None) per array into specs: names and
   strides for the inputs, neither for the outputs (written). */
static ArraySpec *array_specs(PyObject *t, Py_ssize_t *n, const Call *c, int inputs) {
    ArraySpec *a = new_specs(t, n);
    if (a == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *name, *dtype, *shape, *strides;
        Py_ssize_t slot;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(t, i), "OO!nO!O", &name, &PyArrayDescr_Type,
                              &dtype, &slot, &PyTuple_Type, &shape, &strides) ||
            parse_spec(&a[i], dtype, slot, shape, inputs ? strides : Py_None, !inputs,
                       c->nparams, c->nwords) < 0)
            goto fail;
        if (inputs) {
            if (!PyUnicode_CheckExact(name) || strides == Py_None) {
                PyErr_SetString(PyExc_ValueError, "Stub: an input needs a name and strides");
                goto fail;
            }
            Py_INCREF(name);
            a[i].name = name;
        }
    }
    return a;
fail:
    spec_clear(a, *n);
    return NULL;
}

static PyObject *stub_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames);

/* Stub(sizes, images, scalars, out_list, outs, fixed, nparams, nbytes, pairs, entry,
        on_error, miss, keep): see frontends/fastcall.py, which makes them. */
static PyObject *stub_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *sizes, *images, *scalars, *outs, *fixed, *nbytes, *pairs, *on_error, *miss,
        *keep;
    int out_list;
    Py_ssize_t nparams;
    unsigned long long entry;
    if (kw != NULL && PyDict_GET_SIZE(kw) > 0) {
        PyErr_SetString(PyExc_TypeError, "Stub takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!O!pO!O!nO!O!KOOO", &PyTuple_Type, &sizes,
                          &PyTuple_Type, &images, &PyTuple_Type, &scalars, &out_list,
                          &PyTuple_Type, &outs, &PyTuple_Type, &fixed, &nparams,
                          &PyTuple_Type, &nbytes, &PyTuple_Type, &pairs, &entry, &on_error,
                          &miss, &keep))
        return NULL;
    Stub *s = (Stub *)type->tp_alloc(type, 0);
    if (s == NULL)
        return NULL;
    s->vectorcall = stub_vectorcall;
    s->out_list = out_list;
    if (call_init(&s->call, fixed, nparams, nbytes, pairs, entry, on_error, miss, keep) < 0 ||
        (s->sizes = int64s(sizes, &s->nsizes, "sizes")) == NULL ||
        (s->images = array_specs(images, &s->nimages, &s->call, 1)) == NULL ||
        (s->outs = array_specs(outs, &s->nouts, &s->call, 0)) == NULL)
        goto fail;
    s->nscalars = PyTuple_GET_SIZE(scalars);
    s->scalars = PyMem_Calloc(s->nscalars > 0 ? (size_t)s->nscalars : 1, sizeof(ScalarSpec));
    if (s->scalars == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < s->nscalars; i++) {
        PyObject *name, *kind, *value;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(scalars, i), "UOO", &name, &kind, &value))
            goto fail;
        if (kind != (PyObject *)&PyLong_Type && kind != (PyObject *)&PyBool_Type &&
            kind != (PyObject *)&PyFloat_Type) {
            PyErr_SetString(PyExc_ValueError, "Stub: a scalar must be an int, bool or float");
            goto fail;
        }
        Py_INCREF(name);
        Py_INCREF(kind);
        Py_INCREF(value);
        s->scalars[i] = (ScalarSpec){name, kind, value};
    }
    return (PyObject *)s;
fail:
    Py_DECREF(s);
    return NULL;
}

/* The items of an exact list or tuple (NULL: neither). */
static PyObject *const *sequence_items(PyObject *o, Py_ssize_t *n) {
    if (PyList_CheckExact(o)) {
        *n = PyList_GET_SIZE(o);
        return ((PyListObject *)o)->ob_item;
    }
    if (PyTuple_CheckExact(o)) {
        *n = PyTuple_GET_SIZE(o);
        return ((PyTupleObject *)o)->ob_item;
    }
    return NULL;
}

static PyObject *stub_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames) {
    Stub *s = (Stub *)op;
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "a Stub takes (sizes, inputs, out)");
        return NULL;
    }
    PyObject *sizes = args[0], *inputs = args[1], *out = args[2];
    Py_ssize_t n;
    PyObject *const *items = sequence_items(sizes, &n);
    if (items == NULL || n != s->nsizes)
        goto miss;
    for (Py_ssize_t i = 0; i < n; i++) {
        int overflow;
        if (!PyLong_CheckExact(items[i]))
            goto miss;
        long long v = PyLong_AsLongLongAndOverflow(items[i], &overflow);
        if (overflow || v != s->sizes[i])
            goto miss;
    }
    if (!PyDict_CheckExact(inputs) || PyDict_GET_SIZE(inputs) != s->nimages + s->nscalars)
        goto miss;
    int64_t words[MAX_WORDS];
    memcpy(words, s->call.fixed, (size_t)s->call.nwords * sizeof(int64_t));
    for (Py_ssize_t i = 0; i < s->nimages; i++) {
        PyObject *a = PyDict_GetItemWithError(inputs, s->images[i].name);
        if (a == NULL) {
            if (PyErr_Occurred())
                return NULL;
            goto miss;
        }
        if (!take_array(a, &s->images[i], words))
            goto miss;
    }
    for (Py_ssize_t i = 0; i < s->nscalars; i++) {
        const ScalarSpec *spec = &s->scalars[i];
        PyObject *v = PyDict_GetItemWithError(inputs, spec->name);
        if (v == NULL) {
            if (PyErr_Occurred())
                return NULL;
            goto miss;
        }
        if ((PyObject *)Py_TYPE(v) != spec->type)
            goto miss;
        if (spec->type == (PyObject *)&PyFloat_Type) {
            double x = PyFloat_AS_DOUBLE(v), y = PyFloat_AS_DOUBLE(spec->value);
            if (!(x == y) || signbit(x) != signbit(y))
                goto miss;  /* NaN never matches; -0.0 is not 0.0 (1 / w tells them apart) */
        } else {
            int eq = PyObject_RichCompareBool(v, spec->value, Py_EQ);
            if (eq < 0)
                return NULL;
            if (!eq)
                goto miss;
        }
    }
    PyObject *const *given;
    Py_ssize_t ngiven;
    if (s->out_list) {
        if ((given = sequence_items(out, &ngiven)) == NULL)
            goto miss;
    } else {
        given = &args[2];
        ngiven = 1;
    }
    if (ngiven != s->nouts)
        goto miss;
    for (Py_ssize_t i = 0; i < ngiven; i++)
        if (!take_array(given[i], &s->outs[i], words) ||
            !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)given[i]))
            goto miss;
    if (call_overlaps(&s->call, words))
        goto miss;
    if (call_run(&s->call, words) < 0)
        return NULL;
    if (!s->out_list) {
        Py_INCREF(out);
        return out;
    }
    if (ngiven == 1) {
        Py_INCREF(given[0]);
        return given[0];
    }
    PyObject *res = PyList_New(ngiven);
    if (res == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < ngiven; i++) {
        Py_INCREF(given[i]);
        PyList_SET_ITEM(res, i, given[i]);
    }
    return res;
miss:
    Py_INCREF(s->call.miss);
    return s->call.miss;
}

/* ---------------------------------------------------------------- ArgsStub */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Py_ssize_t nargs, nimages, nvalues, nints;
    ArraySpec *images;
    Py_ssize_t *values;          /* (index, slot) per Float64 scalar passed by address */
    long long *ints;             /* (index, value) per specialized Int argument */
    Py_ssize_t result;           /* the argument returned, or -1: None */
    Call call;
} ArgsStub;

static void args_stub_dealloc(ArgsStub *s) {
    spec_clear(s->images, s->nimages);
    PyMem_Free(s->values);
    PyMem_Free(s->ints);
    call_clear(&s->call);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *args_stub_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf,
                                      PyObject *kwnames);

/* ArgsStub(nargs, images, values, ints, fixed, nparams, nbytes, pairs, result, entry,
            on_error, miss, keep): see frontends/fastcall.py, which makes them. */
static PyObject *args_stub_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *images, *values, *ints, *fixed, *nbytes, *pairs, *on_error, *miss, *keep;
    Py_ssize_t nargs, nparams, result;
    unsigned long long entry;
    if (kw != NULL && PyDict_GET_SIZE(kw) > 0) {
        PyErr_SetString(PyExc_TypeError, "ArgsStub takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "nO!O!O!O!nO!O!nKOOO", &nargs, &PyTuple_Type, &images,
                          &PyTuple_Type, &values, &PyTuple_Type, &ints, &PyTuple_Type,
                          &fixed, &nparams, &PyTuple_Type, &nbytes, &PyTuple_Type, &pairs,
                          &result, &entry, &on_error, &miss, &keep))
        return NULL;
    if (result < -1 || result >= nargs) {
        PyErr_SetString(PyExc_ValueError, "ArgsStub: a result that is no argument");
        return NULL;
    }
    ArgsStub *s = (ArgsStub *)type->tp_alloc(type, 0);
    if (s == NULL)
        return NULL;
    s->vectorcall = args_stub_vectorcall;
    s->nargs = nargs;
    s->result = result;
    if (call_init(&s->call, fixed, nparams, nbytes, pairs, entry, on_error, miss, keep) < 0 ||
        (s->images = new_specs(images, &s->nimages)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < s->nimages; i++) {
        ArraySpec *a = &s->images[i];
        PyObject *dtype, *shape, *strides;
        Py_ssize_t slot;
        int writes;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(images, i), "nO!nO!O!p", &a->index,
                              &PyArrayDescr_Type, &dtype, &slot, &PyTuple_Type, &shape,
                              &PyTuple_Type, &strides, &writes) ||
            parse_spec(a, dtype, slot, shape, strides, writes, nparams, s->call.nwords) < 0)
            goto fail;
        if (a->index < 0 || a->index >= nargs) {
            PyErr_SetString(PyExc_ValueError, "ArgsStub: an array's index is no argument");
            goto fail;
        }
    }
    if ((s->values = index_pairs(values, &s->nvalues, nargs, s->call.nwords,
                                 "values")) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < s->nvalues; i++)
        if (s->values[2 * i + 1] < nparams) {
            PyErr_SetString(PyExc_ValueError, "ArgsStub: a value's slot is a param's");
            goto fail;
        }
    s->nints = PyTuple_GET_SIZE(ints);
    s->ints = PyMem_Calloc(s->nints > 0 ? 2 * (size_t)s->nints : 1, sizeof(long long));
    if (s->ints == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < s->nints; i++) {
        Py_ssize_t index;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(ints, i), "nL", &index, &s->ints[2 * i + 1]))
            goto fail;
        if (index < 0 || index >= nargs) {
            PyErr_SetString(PyExc_ValueError, "ArgsStub: an Int's index is no argument");
            goto fail;
        }
        s->ints[2 * i] = index;
    }
    return (PyObject *)s;
fail:
    Py_DECREF(s);
    return NULL;
}

static PyObject *args_stub_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf,
                                      PyObject *kwnames) {
    ArgsStub *s = (ArgsStub *)op;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL || !PyTuple_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "an ArgsStub takes the tuple of arguments");
        return NULL;
    }
    PyObject *given = args[0];
    if (PyTuple_GET_SIZE(given) != s->nargs)
        goto miss;
    int64_t words[MAX_WORDS];
    double values[MAX_WORDS];
    memcpy(words, s->call.fixed, (size_t)s->call.nwords * sizeof(int64_t));
    for (Py_ssize_t i = 0; i < s->nimages; i++)
        if (!take_array(PyTuple_GET_ITEM(given, s->images[i].index), &s->images[i], words))
            goto miss;
    for (Py_ssize_t i = 0; i < s->nvalues; i++) {
        PyObject *v = PyTuple_GET_ITEM(given, s->values[2 * i]);
        if (!PyFloat_Check(v))  /* a Python float or numpy float64 (a Float64) */
            goto miss;
        values[i] = PyFloat_AS_DOUBLE(v);
        words[s->values[2 * i + 1]] = (int64_t)(intptr_t)&values[i];
    }
    for (Py_ssize_t i = 0; i < s->nints; i++) {
        PyObject *v = PyTuple_GET_ITEM(given, (Py_ssize_t)s->ints[2 * i]);
        int overflow;
        if (!PyLong_CheckExact(v))
            goto miss;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || x != s->ints[2 * i + 1])
            goto miss;
    }
    if (call_overlaps(&s->call, words))
        goto miss;
    if (call_run(&s->call, words) < 0)
        return NULL;
    if (s->result < 0)
        Py_RETURN_NONE;
    PyObject *res = PyTuple_GET_ITEM(given, s->result);
    Py_INCREF(res);
    return res;
miss:
    Py_INCREF(s->call.miss);
    return s->call.miss;
}

/* ------------------------------------------------------------------ module */

static PyTypeObject StubType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_me_fastcall.Stub",
    .tp_basicsize = sizeof(Stub),
    .tp_dealloc = (destructor)stub_dealloc,
    .tp_vectorcall_offset = offsetof(Stub, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A prepared realize call checked and made in C.",
    .tp_new = stub_new,
};

static PyTypeObject ArgsStubType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_me_fastcall.ArgsStub",
    .tp_basicsize = sizeof(ArgsStub),
    .tp_dealloc = (destructor)args_stub_dealloc,
    .tp_vectorcall_offset = offsetof(ArgsStub, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A repeated call with positional arguments checked and made in C.",
    .tp_new = args_stub_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_me_fastcall",
    "Repeated kernel calls in C (frontends/fastcall.py).", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__me_fastcall(void) {
    import_array();
    if (PyType_Ready(&StubType) < 0 || PyType_Ready(&ArgsStubType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Stub", (PyObject *)&StubType) < 0 ||
        PyModule_AddObjectRef(m, "ArgsStub", (PyObject *)&ArgsStubType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
