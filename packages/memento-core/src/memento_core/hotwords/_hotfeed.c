/* memento_core.hotwords._hotfeed: the compiled fast path of memento_core.hotwords._detector.
 *
 * Three types:
 *
 * - Automaton: an Aho-Corasick automaton over bytes, built from the detector's keys (the UTF-8
 *   bytes of the normalised variants, passed as Latin-1 strings). Read-only once built, shared
 *   by every conversation of a detector.
 * - Scanner: one conversation's position in the automaton and the last bytes of its normalised
 *   text. Scanner.feed takes a raw chunk and does, for the common case only (every character
 *   ASCII or a Hangul syllable), what StreamNormaliser.extend, the UTF-8 encoding and the
 *   pyahocorasick search do in the pure-Python path; for any other chunk it declines (returns
 *   False, changing nothing) and detector.py takes its pure-Python path for that chunk, then
 *   hands the normalised bytes to Scanner.step.
 * - ConversationBase: the base class of detector.Conversation, for its feed method: one C call
 *   per chunk, as a Python call costs as much as scanning a chunk. While no earlier match waits
 *   for a decision, a chunk the scanner takes without a match for a uid yet to fire never leaves
 *   C, and one whose matches are final at once (no word boundary to check, none in the
 *   provisional tail) is settled here, leaving Python only the events to make.
 *
 * Everything else (candidates, boundaries, settling in general, events) stays in Python: it runs
 * only when something matched. detector.py is the reference; tests/core/test_hotfeed.py checks
 * that both paths give the same detections.
 *
 * Layout of the automaton. Nodes are numbered breadth-first with each node's children in byte
 * order, so the children of node u are the consecutive nodes [first[u], first[u + 1]) and a
 * node's outgoing edges need no array of their own: label[v] is the byte on the edge into v.
 * Node 0 is the root; its children are also in a dense 256-entry table.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t first; /* first child; the children end where node u + 1's begin */
    uint32_t fail;  /* the longest proper suffix of this node's path that is a node */
    int32_t key;    /* index of the key ending here, or -1 */
    uint32_t match; /* the nearest node with a key on the fail chain from here (self included), 0 if none */
} Node;

typedef struct {
    PyObject_HEAD
    Node *nodes;        /* n_nodes + 1 entries: the last closes the last node's child range */
    uint8_t *labels;    /* n_nodes entries */
    uint32_t n_nodes;
    Py_ssize_t n_keys;
    Py_ssize_t longest; /* bytes in the longest key */
    uint32_t root_next[256];
} AutomatonObject;

typedef struct {
    PyObject_HEAD
    AutomatonObject *automaton; /* strong reference */
    uint32_t state;
    Py_ssize_t window;   /* bytes rewind replays from the root (more than the longest key) */
    Py_ssize_t keep;     /* bytes of older text kept before each new chunk */
    Py_ssize_t start;    /* offset in the text of buf[0] */
    Py_ssize_t len;      /* bytes in buf: the text runs from start to start + len */
    Py_ssize_t cap;
    uint8_t *buf;
    int ends_in_space;   /* whether the normalised text so far ends in a (collapsed) space */
    int waiting;         /* set by Python while matches wait for a decision */
    Py_ssize_t serial;   /* chunks taken by feed or step: the serial of the last one */
    PyObject *last_chunk; /* the last chunk feed took, not yet handed over by take_chunk */
} ScannerObject;

typedef struct {
    PyObject_HEAD
    ScannerObject *scanner; /* NULL on the pure-Python path; strong references, all three */
    PyObject *targets;      /* detector._targets: per key, (length, check start, check end,
                               then an entry index and a variant index per uid) */
    PyObject *fired;        /* the conversation's set of fired entry indices */
} ConversationBaseObject;

static PyTypeObject AutomatonType;
static PyTypeObject ScannerType;

/* The bytes of a str of code points below 256 (bytes as Latin-1 characters), or NULL with
 * TypeError for anything else. */
static const uint8_t *
latin1_bytes(PyObject *text, Py_ssize_t *size)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "expected bytes as Latin-1 characters (a str)");
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)
        return NULL;
#endif
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND) {
        PyErr_SetString(PyExc_TypeError, "expected bytes as Latin-1 characters (a str)");
        return NULL;
    }
    *size = PyUnicode_GET_LENGTH(text);
    return PyUnicode_1BYTE_DATA(text);
}

/* --- the automaton ------------------------------------------------------------------------- */

/* The child of non-root node s along byte b, or 0. Children are sorted by label; the binary
 * search is written so that the compiler can use conditional moves: random text makes the
 * branches of an ordinary one mispredicted half the time, which costs more than the loads. */
static inline uint32_t
child_of(const AutomatonObject *a, uint32_t s, uint8_t b)
{
    uint32_t base = a->nodes[s].first, n = a->nodes[s + 1].first - base;
    if (n == 0)
        return 0;
    const uint8_t *labels = a->labels;
    while (n > 1) {
        uint32_t half = n / 2;
        base = labels[base + half] <= b ? base + half : base;
        n -= half;
    }
    return labels[base] == b ? base : 0;
}

/* The goto function: the state after reading byte b in state s. */
static inline uint32_t
next_state(const AutomatonObject *a, uint32_t s, uint8_t b)
{
    for (;;) {
        if (s == 0)
            return a->root_next[b];
        uint32_t t = child_of(a, s, b);
        if (t)
            return t;
        s = a->nodes[s].fail;
    }
}

typedef struct {
    const uint8_t *bytes;
    Py_ssize_t size;
    Py_ssize_t index; /* the key's index in the list given */
} Key;

static int
compare_keys(const void *left, const void *right)
{
    const Key *x = left, *y = right;
    Py_ssize_t common = x->size < y->size ? x->size : y->size;
    int order = memcmp(x->bytes, y->bytes, (size_t)common);
    if (order)
        return order;
    return (x->size > y->size) - (x->size < y->size);
}

/* A run of sorted keys [lo, hi) sharing the path to one node (and long enough to go on). */
typedef struct {
    uint32_t node;
    Py_ssize_t lo, hi;
} Group;

static int
grow(void **array, size_t *capacity, size_t needed, size_t item)
{
    if (needed <= *capacity)
        return 0;
    size_t wanted = *capacity ? *capacity : 1024;
    while (wanted < needed)
        wanted *= 2;
    void *bigger = PyMem_Realloc(*array, wanted * item);
    if (!bigger) {
        PyErr_NoMemory();
        return -1;
    }
    *array = bigger;
    *capacity = wanted;
    return 0;
}

/* Build the trie level by level from the sorted keys: at depth d, each run of keys with the
 * same first d bytes is one node, so numbering the runs level by level, in key order, numbers
 * the nodes breadth-first with siblings in byte order. Then the fail links, breadth-first. */
static int
build(AutomatonObject *a, Key *keys, Py_ssize_t n_keys)
{
    size_t node_cap = 0, group_cap = 0, next_cap = 0;
    Node *nodes = NULL;
    uint8_t *labels = NULL;
    size_t label_cap = 0;
    Group *groups = NULL, *next = NULL;
    size_t n_groups = 0, n_nodes = 1;
    int status = -1;

    if (grow((void **)&nodes, &node_cap, 2, sizeof(Node)) < 0 ||
        grow((void **)&labels, &label_cap, 1, 1) < 0 ||
        grow((void **)&groups, &group_cap, 1, sizeof(Group)) < 0)
        goto done;
    nodes[0] = (Node){0, 0, -1, 0};
    labels[0] = 0;
    groups[0] = (Group){0, 0, n_keys};
    n_groups = 1;
    for (Py_ssize_t depth = 0; n_groups; depth++) {
        size_t n_next = 0;
        for (size_t g = 0; g < n_groups; g++) {
            Group group = groups[g];
            Py_ssize_t i = group.lo;
            nodes[group.node].first = (uint32_t)n_nodes;
            if (i < group.hi && keys[i].size == depth) { /* sorted: a key that is the path comes first */
                nodes[group.node].key = (int32_t)keys[i].index;
                i++;
            }
            while (i < group.hi) {
                uint8_t byte = keys[i].bytes[depth];
                Py_ssize_t j = i + 1;
                while (j < group.hi && keys[j].bytes[depth] == byte)
                    j++;
                if (n_nodes >= UINT32_MAX - 1) {
                    PyErr_SetString(PyExc_OverflowError, "too many automaton nodes");
                    goto done;
                }
                if (grow((void **)&nodes, &node_cap, n_nodes + 2, sizeof(Node)) < 0 ||
                    grow((void **)&labels, &label_cap, n_nodes + 1, 1) < 0 ||
                    grow((void **)&next, &next_cap, n_next + 1, sizeof(Group)) < 0)
                    goto done;
                nodes[n_nodes] = (Node){0, 0, -1, 0};
                labels[n_nodes] = byte;
                next[n_next++] = (Group){(uint32_t)n_nodes, i, j};
                n_nodes++;
                i = j;
            }
        }
        Group *swap = groups;
        size_t swap_cap = group_cap;
        groups = next;
        group_cap = next_cap;
        next = swap;
        next_cap = swap_cap;
        n_groups = n_next;
    }
    nodes[n_nodes].first = (uint32_t)n_nodes; /* closes the last node's (empty) child range */

    a->nodes = nodes;
    a->labels = labels;
    a->n_nodes = (uint32_t)n_nodes;
    memset(a->root_next, 0, sizeof(a->root_next));
    for (uint32_t v = nodes[0].first; v < nodes[1].first; v++)
        a->root_next[labels[v]] = v;
    /* Breadth-first, so a node's fail link and its parent's are set before it needs them. */
    for (uint32_t u = 0; u < n_nodes; u++) {
        for (uint32_t v = nodes[u].first; v < nodes[u + 1].first; v++) {
            uint32_t fail = u == 0 ? 0 : next_state(a, nodes[u].fail, labels[v]);
            nodes[v].fail = fail;
            nodes[v].match = nodes[v].key >= 0 ? v : nodes[fail].match;
        }
    }
    nodes = NULL;
    labels = NULL;
    status = 0;
done:
    PyMem_Free(nodes);
    PyMem_Free(labels);
    PyMem_Free(groups);
    PyMem_Free(next);
    return status;
}

static PyObject *
Automaton_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"keys", NULL};
    PyObject *arg, *seq = NULL;
    Key *keys = NULL;
    AutomatonObject *self = NULL;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Automaton", kwlist, &arg))
        return NULL;
    seq = PySequence_Fast(arg, "keys must be a sequence of strings");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many keys");
        goto fail;
    }
    keys = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Key));
    if (!keys) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t longest = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* Borrowed: seq holds the keys, and nothing here runs Python code. */
        Py_ssize_t size;
        const uint8_t *bytes = latin1_bytes(PySequence_Fast_GET_ITEM(seq, i), &size);
        if (!bytes)
            goto fail;
        if (size == 0) {
            PyErr_SetString(PyExc_ValueError, "empty key");
            goto fail;
        }
        keys[i] = (Key){bytes, size, i};
        if (keys[i].size > longest)
            longest = keys[i].size;
    }
    qsort(keys, (size_t)n, sizeof(Key), compare_keys);
    for (Py_ssize_t i = 1; i < n; i++) {
        if (compare_keys(&keys[i - 1], &keys[i]) == 0) {
            PyErr_SetString(PyExc_ValueError, "duplicate key");
            goto fail;
        }
    }
    self = (AutomatonObject *)type->tp_alloc(type, 0);
    if (!self)
        goto fail;
    self->n_keys = n;
    self->longest = longest;
    if (build(self, keys, n) < 0)
        goto fail;
    PyMem_Free(keys);
    Py_DECREF(seq);
    return (PyObject *)self;
fail:
    PyMem_Free(keys);
    Py_XDECREF(seq);
    Py_XDECREF(self);
    return NULL;
}

static void
Automaton_dealloc(AutomatonObject *self)
{
    PyMem_Free(self->nodes);
    PyMem_Free(self->labels);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Append (end, key) for every key ending at node s's match chain; end is a text offset. */
static int
report(const AutomatonObject *a, uint32_t s, Py_ssize_t end, PyObject **found)
{
    for (uint32_t t = a->nodes[s].match; t; t = a->nodes[a->nodes[t].fail].match) {
        if (!*found && !(*found = PyList_New(0)))
            return -1;
        PyObject *pair = Py_BuildValue("(ni)", end, (int)a->nodes[t].key);
        if (!pair)
            return -1;
        int status = PyList_Append(*found, pair);
        Py_DECREF(pair);
        if (status < 0)
            return -1;
    }
    return 0;
}

/* Run the automaton from state *state over bytes[0:size], whose first byte is at text offset
 * origin; collect matches in *found (created on the first). On an error (only a failed
 * allocation), the run still completes, so *state is right, and -1 is returned. */
static int
run(const AutomatonObject *a, uint32_t *state, const uint8_t *bytes, Py_ssize_t size,
    Py_ssize_t origin, PyObject **found)
{
    uint32_t s = *state;
    int status = 0;
    for (Py_ssize_t i = 0; i < size; i++) {
        s = next_state(a, s, bytes[i]);
        if (a->nodes[s].match && status == 0)
            status = report(a, s, origin + i, found);
    }
    *state = s;
    return status;
}

static PyObject *
Automaton_findall(AutomatonObject *self, PyObject *text)
{
    Py_ssize_t size;
    const uint8_t *bytes = latin1_bytes(text, &size);
    if (!bytes)
        return NULL;
    PyObject *found = NULL;
    uint32_t state = 0;
    if (run(self, &state, bytes, size, 0, &found) < 0) {
        Py_XDECREF(found);
        return NULL;
    }
    return found ? found : PyList_New(0);
}

static PyObject *
Automaton_scanner(AutomatonObject *self, PyObject *args)
{
    Py_ssize_t window, keep;
    if (!PyArg_ParseTuple(args, "nn:scanner", &window, &keep))
        return NULL;
    if (window < 0 || keep < window || keep > PY_SSIZE_T_MAX / 8) {
        PyErr_SetString(PyExc_ValueError, "need 0 <= window <= keep");
        return NULL;
    }
    ScannerObject *scanner = PyObject_New(ScannerObject, &ScannerType);
    if (!scanner)
        return NULL;
    scanner->cap = 2 * keep + 256;
    scanner->buf = PyMem_Malloc((size_t)scanner->cap);
    if (!scanner->buf) {
        scanner->automaton = NULL;
        scanner->last_chunk = NULL;
        Py_DECREF(scanner);
        return PyErr_NoMemory();
    }
    Py_INCREF(self);
    scanner->automaton = self;
    scanner->state = 0;
    scanner->window = window;
    scanner->keep = keep;
    scanner->start = 0;
    scanner->len = 0;
    scanner->ends_in_space = 0;
    scanner->waiting = 0;
    scanner->serial = 0;
    scanner->last_chunk = NULL;
    return (PyObject *)scanner;
}

static PyObject *
Automaton_sizeof(AutomatonObject *self, PyObject *Py_UNUSED(ignored))
{
    size_t size = sizeof(AutomatonObject);
    if (self->nodes)
        size += (self->n_nodes + 1) * sizeof(Node) + self->n_nodes;
    return PyLong_FromSize_t(size);
}

static PyObject *
Automaton_get_nodes(AutomatonObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLong(self->n_nodes);
}

static PyObject *
Automaton_get_longest(AutomatonObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->longest);
}

static Py_ssize_t
Automaton_len(AutomatonObject *self)
{
    return self->n_keys;
}

static PyMethodDef Automaton_methods[] = {
    {"findall", (PyCFunction)Automaton_findall, METH_O,
     "findall(text) -> [(end, key index), ...] over a whole text (bytes as Latin-1 characters)."},
    {"scanner", (PyCFunction)Automaton_scanner, METH_VARARGS,
     "scanner(window, keep) -> a new Scanner at the start of a text."},
    {"__sizeof__", (PyCFunction)Automaton_sizeof, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Automaton_getset[] = {
    {"nodes", (getter)Automaton_get_nodes, NULL, "Number of nodes, the root included.", NULL},
    {"longest", (getter)Automaton_get_longest, NULL, "Bytes in the longest key.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Automaton_as_sequence = {.sq_length = (lenfunc)Automaton_len};

static PyTypeObject AutomatonType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "memento_core.hotwords._hotfeed.Automaton",
    .tp_doc = "Automaton(keys): Aho-Corasick over bytes; keys are bytes as Latin-1 strings.",
    .tp_basicsize = sizeof(AutomatonObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Automaton_new,
    .tp_dealloc = (destructor)Automaton_dealloc,
    .tp_methods = Automaton_methods,
    .tp_getset = Automaton_getset,
    .tp_as_sequence = &Automaton_as_sequence,
};

/* --- the scanner --------------------------------------------------------------------------- */

/* Make room for `extra` more bytes. Old text is dropped only here, before a chunk is added, and
 * `keep` bytes of it always stay: the Python side looks back at most that far (a window for
 * boundary checks and rewinds, plus the provisional tail) from the end of the previous chunk. */
static int
reserve_slow(ScannerObject *self, Py_ssize_t extra)
{
    Py_ssize_t base = 2 * self->keep + 256;
    if (extra > PY_SSIZE_T_MAX / 2 - self->len) {
        PyErr_NoMemory();
        return -1;
    }
    if (self->len + extra <= self->cap)
        return 0;
    if (self->len > self->keep) {
        Py_ssize_t drop = self->len - self->keep;
        memmove(self->buf, self->buf + drop, (size_t)self->keep);
        self->start += drop;
        self->len = self->keep;
    }
    Py_ssize_t wanted = self->len + extra;
    /* Grow for a large chunk; shrink back once the large chunks have passed. */
    if (wanted > self->cap || (self->cap > base && wanted <= self->cap / 4)) {
        Py_ssize_t cap = wanted > base ? wanted : base;
        uint8_t *buf = PyMem_Realloc(self->buf, (size_t)cap);
        if (!buf) {
            PyErr_NoMemory();
            return -1;
        }
        self->buf = buf;
        self->cap = cap;
    }
    return 0;
}

/* Nearly every chunk fits in the room left: that check is inlined, the rest is not. */
static inline int
reserve(ScannerObject *self, Py_ssize_t extra)
{
    return extra <= self->cap - self->len ? 0 : reserve_slow(self, extra);
}

static PyObject *
matches_or_none(PyObject *found, int status)
{
    if (status < 0) {
        Py_XDECREF(found);
        return NULL;
    }
    if (found)
        return found;
    Py_RETURN_NONE;
}

/* Whitespace as str.isspace() (and re's \s) sees it in ASCII. */
static const uint8_t is_space[128] = {
    ['\t'] = 1, ['\n'] = 1, ['\v'] = 1, ['\f'] = 1, ['\r'] = 1,
    [0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1, [' '] = 1,
};

/* An ASCII character normalised: lower case, and whitespace as a space. */
static uint8_t ascii_folded[128];

static void
init_ascii_folded(void)
{
    for (int c = 0; c < 128; c++)
        ascii_folded[c] = is_space[c] ? ' ' : c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : (uint8_t)c;
}

/* The ASCII characters that a following character can still change (a combining mark composes
 * with them), so StreamNormaliser holds them back as provisional at the end of a chunk. */
static const char held_ascii[] = "<=>ABCDEFGHIJKLMNOPRSTUVWXYZabcdefghijklmnoprstuvwxyz";

/* feed(chunk): the fast path of Conversation.feed. For a str whose characters are all ASCII or
 * Hangul syllables (U+AC00..U+D7A3), which NFC and case folding leave alone but for ASCII
 * upper case, and which never join with a neighbour: lower-case, collapse whitespace runs
 * (across chunks too), append the UTF-8 bytes, step the automaton and count the chunk. Returns
 * None if nothing matched, else [(end, key index), ...]. For anything else returns False and
 * changes nothing. */
static PyObject *
Scanner_feed(ScannerObject *self, PyObject *chunk)
{
    if (!PyUnicode_CheckExact(chunk))
        Py_RETURN_FALSE;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(chunk) < 0)
        return NULL;
#endif
    Py_ssize_t n = PyUnicode_GET_LENGTH(chunk);
    int kind = PyUnicode_KIND(chunk);
    int ascii = PyUnicode_IS_ASCII(chunk);
    if (n == 0) {
        self->serial++; /* a chunk, though like StreamNormaliser.extend("") it changes no text */
        Py_RETURN_NONE;
    }
    if (!ascii && kind != PyUnicode_2BYTE_KIND)
        Py_RETURN_FALSE;
    if (n > PY_SSIZE_T_MAX / 4 || reserve(self, ascii ? n : 3 * n) < 0)
        return NULL;

    /* Normalise into the free space after the text; committed only once the whole chunk has
     * been taken, so declining leaves no trace. The loops have no branch on the characters:
     * in mixed text those are mispredicted often enough to cost more than the work. A space
     * after a space is written but not kept, and in a chunk with Hangul every character
     * writes three bytes but an ASCII one keeps only the first (reserve made room for that). */
    uint8_t *out = self->buf + self->len;
    int space = self->ends_in_space;
    if (ascii) {
        const Py_UCS1 *in = PyUnicode_1BYTE_DATA(chunk);
        for (Py_ssize_t i = 0; i < n; i++) {
            int is = is_space[in[i]];
            *out = ascii_folded[in[i]];
            out += !(is & space);
            space = is;
        }
    }
    else {
        const Py_UCS2 *in = PyUnicode_2BYTE_DATA(chunk);
        int other = 0; /* neither ASCII nor a Hangul syllable: decline the chunk */
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS2 c = in[i];
            int hangul = c >= 0xAC00;
            other |= c >= 0x80 && (c < 0xAC00 || c > 0xD7A3);
            int is = (!hangul) & is_space[c & 0x7F];
            out[0] = hangul ? (uint8_t)(0xE0 | (c >> 12)) : ascii_folded[c & 0x7F];
            out[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
            out[2] = (uint8_t)(0x80 | (c & 0x3F));
            out += hangul ? 3 : !(is & space);
            space = is;
        }
        if (other)
            Py_RETURN_FALSE;
    }

    Py_ssize_t added = out - (self->buf + self->len);
    PyObject *found = NULL;
    int status = run(self->automaton, &self->state, self->buf + self->len, added,
                     self->start + self->len, &found);
    self->len += added;
    self->ends_in_space = space;
    self->serial++;
    Py_INCREF(chunk);
    Py_XSETREF(self->last_chunk, chunk);
    return matches_or_none(found, status);
}

/* step(encoded, ends_in_space): add normalised text the Python path produced for a chunk (UTF-8
 * bytes as Latin-1 characters), step the automaton and count the chunk; the Python normaliser
 * now holds the state, so the chunk feed last took is forgotten. Returns None or
 * [(end, key index), ...]. */
static PyObject *
Scanner_step(ScannerObject *self, PyObject *args)
{
    PyObject *text;
    int ends_in_space;
    if (!PyArg_ParseTuple(args, "Op:step", &text, &ends_in_space))
        return NULL;
    Py_ssize_t n;
    const uint8_t *bytes = latin1_bytes(text, &n);
    if (!bytes || reserve(self, n) < 0)
        return NULL;
    memcpy(self->buf + self->len, bytes, (size_t)n);
    PyObject *found = NULL;
    int status = run(self->automaton, &self->state, self->buf + self->len, n,
                     self->start + self->len, &found);
    self->len += n;
    self->ends_in_space = ends_in_space;
    self->serial++;
    Py_CLEAR(self->last_chunk);
    return matches_or_none(found, status);
}

/* take_chunk(): the last chunk feed took (or None), handed over to the Python normaliser. */
static PyObject *
Scanner_take_chunk(ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *chunk = self->last_chunk;
    self->last_chunk = NULL;
    if (chunk)
        return chunk; /* the reference passes to the caller */
    Py_RETURN_NONE;
}

/* recent() -> (offset, text): the text kept, from its offset in the text on. */
static PyObject *
Scanner_recent(ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *text = PyUnicode_DecodeLatin1((const char *)self->buf, self->len, NULL);
    if (!text)
        return NULL;
    return Py_BuildValue("(nN)", self->start, text);
}

/* rewind(end): cut the text back to offset end (the provisional tail changed) and put the
 * automaton where reading the text up to there leaves it: its state depends on at most the
 * last longest-key bytes, so replaying the last `window` bytes from the root does that. */
static PyObject *
Scanner_rewind(ScannerObject *self, PyObject *arg)
{
    Py_ssize_t end = PyLong_AsSsize_t(arg);
    if (end == -1 && PyErr_Occurred())
        return NULL;
    if (end < self->start || end - self->start > self->len) {
        PyErr_SetString(PyExc_ValueError, "rewind to an offset outside the text kept");
        return NULL;
    }
    self->len = end - self->start;
    Py_ssize_t replay = self->len < self->window ? self->len : self->window;
    uint32_t state = 0;
    const AutomatonObject *a = self->automaton;
    for (Py_ssize_t i = self->len - replay; i < self->len; i++)
        state = next_state(a, state, self->buf[i]);
    self->state = state;
    Py_RETURN_NONE;
}

/* reset(): the start of a new text (chunks are still counted from the first text on). */
static PyObject *
Scanner_reset(ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    self->state = 0;
    self->start = 0;
    self->len = 0;
    self->ends_in_space = 0;
    Py_CLEAR(self->last_chunk);
    Py_RETURN_NONE;
}

static PyObject *
Scanner_get_end(ScannerObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->start + self->len);
}

static PyObject *
Scanner_get_ends_in_space(ScannerObject *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->ends_in_space);
}

/* Where the provisional tail of the text starts, if the scanner took the last chunk (so it, not
 * the Python normaliser, knows that tail): the chunk's last character if what follows can still
 * change it (an ASCII letter, or a Hangul syllable that a final consonant can join), else
 * nothing. -1 when the normaliser has the tail (take_chunk, step). */
static Py_ssize_t
stable_end(ScannerObject *self)
{
    PyObject *chunk = self->last_chunk;
    if (!chunk)
        return -1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(chunk), held = 0;
    Py_UCS4 last = n ? PyUnicode_READ_CHAR(chunk, n - 1) : 0; /* feed keeps no empty chunk */
    if (last >= 0xAC00 && last <= 0xD7A3)
        held = (last - 0xAC00) % 28 == 0 ? 3 : 0;
    else if (last && last < 0x80 && strchr(held_ascii, (int)last))
        held = 1;
    return self->start + self->len - held;
}

static PyObject *
Scanner_get_stable_end(ScannerObject *self, void *Py_UNUSED(closure))
{
    Py_ssize_t end = stable_end(self);
    if (end < 0)
        Py_RETURN_NONE;
    return PyLong_FromSsize_t(end);
}

static PyObject *
Scanner_get_serial(ScannerObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->serial);
}

static PyObject *
Scanner_get_waiting(ScannerObject *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->waiting);
}

static int
Scanner_set_waiting(ScannerObject *self, PyObject *value, void *Py_UNUSED(closure))
{
    int waiting = value ? PyObject_IsTrue(value) : -1;
    if (waiting < 0) {
        if (!value)
            PyErr_SetString(PyExc_AttributeError, "cannot delete waiting");
        return -1;
    }
    self->waiting = waiting;
    return 0;
}

static PyObject *
Scanner_sizeof(ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t((Py_ssize_t)sizeof(ScannerObject) + self->cap);
}

static void
Scanner_dealloc(ScannerObject *self)
{
    PyMem_Free(self->buf);
    Py_XDECREF(self->last_chunk);
    Py_XDECREF(self->automaton);
    PyObject_Free(self);
}

static PyMethodDef Scanner_methods[] = {
    {"feed", (PyCFunction)Scanner_feed, METH_O,
     "feed(chunk) -> None | [(end, key index), ...] | False (declined: use the Python path)."},
    {"step", (PyCFunction)Scanner_step, METH_VARARGS,
     "step(encoded, ends_in_space) -> None | [(end, key index), ...]."},
    {"take_chunk", (PyCFunction)Scanner_take_chunk, METH_NOARGS,
     "take_chunk() -> the last chunk feed took since the last call, or None."},
    {"recent", (PyCFunction)Scanner_recent, METH_NOARGS, "recent() -> (offset, text kept)."},
    {"rewind", (PyCFunction)Scanner_rewind, METH_O, "rewind(end): cut the text back to end."},
    {"reset", (PyCFunction)Scanner_reset, METH_NOARGS, "reset(): start a new text."},
    {"__sizeof__", (PyCFunction)Scanner_sizeof, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Scanner_getset[] = {
    {"end", (getter)Scanner_get_end, NULL, "Offset of the end of the text.", NULL},
    {"ends_in_space", (getter)Scanner_get_ends_in_space, NULL,
     "Whether the text so far ends in a space.", NULL},
    {"stable_end", (getter)Scanner_get_stable_end, NULL,
     "Where the provisional tail starts, or None if the Python normaliser knows it.", NULL},
    {"serial", (getter)Scanner_get_serial, NULL,
     "Chunks taken by feed or step: the serial of the last one.", NULL},
    {"waiting", (getter)Scanner_get_waiting, (setter)Scanner_set_waiting,
     "Set while matches wait for a decision: ConversationBase.feed then hands every chunk over.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "memento_core.hotwords._hotfeed.Scanner",
    .tp_doc = "One conversation's place in an Automaton; made by Automaton.scanner.",
    .tp_basicsize = sizeof(ScannerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_getset = Scanner_getset,
};

/* --- the conversation base ---------------------------------------------------------------- */

/* The names of the methods of Conversation that feed calls, interned. */
static PyObject *str_feed, *str_feed_compiled, *str_fire;

/* At most this many uids firing in one chunk are settled here; more go to Python. */
#define MAX_FIRES 8

typedef struct {
    Py_ssize_t end; /* where the uid's first match in the chunk ends */
    long entry, variant;
} Fire;

/* Settle the matches of a chunk the scanner took, while nothing waits, if that is simple: every
 * match for a uid yet to fire has no boundary to check and ends before the provisional tail, so
 * those uids all fire now. Returns 0 if no match is for a uid yet to fire, 1 with *fires set to
 * [(entry index, variant index), ...] in the order they fire, or -1 (with no exception set) if
 * Python must settle the chunk. The rules are Conversation._settle's and _release's: a uid fires
 * with its earliest-listed variant among the matches, in the order its first match ended, then
 * by entry index. */
static int
settle(ConversationBaseObject *self, PyObject *found, PyObject **fires_out)
{
    Fire fires[MAX_FIRES];
    int n_fires = 0;
    Py_ssize_t stable = stable_end(self->scanner);
    PyObject *targets = self->targets;
    if (stable < 0)
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(found); i++) {
        PyObject *match = PyList_GET_ITEM(found, i);
        Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(match, 0));
        Py_ssize_t key = PyLong_AsSsize_t(PyTuple_GET_ITEM(match, 1));
        if (key < 0 || key >= PyList_GET_SIZE(targets) ||
            !PyTuple_Check(PyList_GET_ITEM(targets, key)))
            goto python;
        PyObject *target = PyList_GET_ITEM(targets, key);
        Py_ssize_t size = PyTuple_GET_SIZE(target);
        for (Py_ssize_t j = 3; j + 1 < size; j += 2) {
            int fired = PySet_Contains(self->fired, PyTuple_GET_ITEM(target, j));
            if (fired < 0)
                goto python;
            if (fired)
                continue;
            if (PyTuple_GET_ITEM(target, 1) != Py_False || PyTuple_GET_ITEM(target, 2) != Py_False ||
                end >= stable)
                goto python; /* a boundary to check, or a match the next chunk may undo */
            long entry = PyLong_AsLong(PyTuple_GET_ITEM(target, j));
            long variant = PyLong_AsLong(PyTuple_GET_ITEM(target, j + 1));
            if ((entry == -1 || variant == -1) && PyErr_Occurred())
                goto python;
            int f = 0;
            while (f < n_fires && fires[f].entry != entry)
                f++;
            if (f == n_fires) {
                if (n_fires == MAX_FIRES)
                    goto python;
                fires[n_fires++] = (Fire){end, entry, variant};
            }
            else {
                fires[f].end = end < fires[f].end ? end : fires[f].end;
                fires[f].variant = variant < fires[f].variant ? variant : fires[f].variant;
            }
        }
    }
    if (n_fires == 0)
        return 0;
    for (int f = 1; f < n_fires; f++) { /* insertion sort by (end, entry): a handful at most */
        Fire fire = fires[f];
        int g = f;
        for (; g > 0 && (fires[g - 1].end > fire.end ||
                         (fires[g - 1].end == fire.end && fires[g - 1].entry > fire.entry));
             g--)
            fires[g] = fires[g - 1];
        fires[g] = fire;
    }
    PyObject *list = PyList_New(n_fires);
    if (!list)
        goto python;
    for (int f = 0; f < n_fires; f++) {
        PyObject *pair = Py_BuildValue("(ll)", fires[f].entry, fires[f].variant);
        if (!pair) {
            Py_DECREF(list);
            goto python;
        }
        PyList_SET_ITEM(list, f, pair);
    }
    *fires_out = list;
    return 1;
python:
    PyErr_Clear(); /* Python settles it, and raises there if something is wrong */
    return -1;
}

/* feed(text_chunk): Conversation.feed. On the compiled path: Scanner.feed, then, if nothing is
 * waiting and the scanner took the chunk, the empty tuple (no allocation) if no match in it is
 * for a uid yet to fire (nearly every chunk) or self._fire(fires) if settle settles it; else
 * self._feed_compiled(chunk, found), found being what Scanner.feed returned. On the pure-Python
 * path, and for any call but with one positional argument (so that keywords work and mistakes
 * raise as in Python), self._feed. */
static PyObject *
ConversationBase_feed(ConversationBaseObject *self, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames)
{
    if (nargs != 1 || kwnames) {
        PyObject *method = PyObject_GetAttr((PyObject *)self, str_feed);
        if (!method)
            return NULL;
        PyObject *result = PyObject_Vectorcall(method, args, (size_t)nargs, kwnames);
        Py_DECREF(method);
        return result;
    }
    /* self, then the arguments, after a free slot: PY_VECTORCALL_ARGUMENTS_OFFSET. */
    PyObject *call[4] = {NULL, (PyObject *)self, args[0], NULL}, *result;
    ScannerObject *scanner = self->scanner;
    if (!scanner)
        return PyObject_VectorcallMethod(str_feed, call + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                         NULL);
    PyObject *found = Scanner_feed(scanner, args[0]);
    if (!found)
        return NULL;
    int settled = found == Py_False || scanner->waiting ? -1
                  : found == Py_None                   ? 0
                                                       : settle(self, found, &call[2]);
    if (settled == 0)
        result = PyTuple_New(0);
    else if (settled == 1) {
        result = PyObject_VectorcallMethod(str_fire, call + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                           NULL);
        Py_DECREF(call[2]);
    }
    else {
        call[3] = found;
        result = PyObject_VectorcallMethod(str_feed_compiled, call + 1,
                                           3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    Py_DECREF(found);
    return result;
}

/* _attach_scanner(scanner, targets, fired): take the compiled path. */
static PyObject *
ConversationBase_attach_scanner(ConversationBaseObject *self, PyObject *args)
{
    PyObject *scanner, *targets, *fired;
    if (!PyArg_ParseTuple(args, "O!O!O!:_attach_scanner", &ScannerType, &scanner, &PyList_Type,
                          &targets, &PySet_Type, &fired))
        return NULL;
    Py_INCREF(scanner);
    Py_XSETREF(self->scanner, (ScannerObject *)scanner);
    Py_INCREF(targets);
    Py_XSETREF(self->targets, targets);
    Py_INCREF(fired);
    Py_XSETREF(self->fired, fired);
    Py_RETURN_NONE;
}

static int
ConversationBase_traverse(ConversationBaseObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->scanner);
    Py_VISIT(self->targets);
    Py_VISIT(self->fired);
    return 0;
}

static int
ConversationBase_clear(ConversationBaseObject *self)
{
    Py_CLEAR(self->scanner);
    Py_CLEAR(self->targets);
    Py_CLEAR(self->fired);
    return 0;
}

static void
ConversationBase_dealloc(ConversationBaseObject *self)
{
    PyObject_GC_UnTrack(self);
    ConversationBase_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *str_feed_name;

/* __init_subclass__: give each subclass a feed descriptor of its own. CPython specialises a call
 * to a C method only when the instance's type is exactly the method's type (PRECALL and CALL
 * check Py_IS_TYPE), so an inherited descriptor sends every feed through the generic call path,
 * about a tenth of a chunk's cost. A subclass that defines feed itself keeps its own. */
static PyObject *
ConversationBase_init_subclass(PyObject *cls, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwargs && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "__init_subclass__() takes no arguments");
        return NULL;
    }
    /* On a class, a method descriptor's __get__ returns the descriptor itself. */
    PyObject *inherited = PyObject_GetAttr(cls, str_feed_name);
    if (!inherited)
        return NULL;
    PyObject *own = NULL;
    if (Py_IS_TYPE(inherited, &PyMethodDescr_Type) &&
        ((PyMethodDescrObject *)inherited)->d_method->ml_meth ==
            (PyCFunction)(void (*)(void))ConversationBase_feed)
        own = PyDescr_NewMethod((PyTypeObject *)cls, ((PyMethodDescrObject *)inherited)->d_method);
    Py_DECREF(inherited);
    if (!own)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    int status = PyObject_SetAttr(cls, str_feed_name, own);
    Py_DECREF(own);
    if (status < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef ConversationBase_methods[] = {
    {"feed", (PyCFunction)(void (*)(void))ConversationBase_feed, METH_FASTCALL | METH_KEYWORDS,
     "feed($self, /, text_chunk)\n--\n\n"
     "Feed the next chunk of a streamed text; return the events decided by it (a tuple).\n\n"
     "A hotword that ends exactly at the end of this chunk may be reported by the next ``feed``\n"
     "or by ``flush`` (see ``memento_core.hotwords._detector``); ``detect_stream`` keeps such a chunk back\n"
     "so its events still come first."},
    {"_attach_scanner", (PyCFunction)ConversationBase_attach_scanner, METH_VARARGS,
     "_attach_scanner(scanner, targets, fired): take the compiled path."},
    {"__init_subclass__", (PyCFunction)(void (*)(void))ConversationBase_init_subclass,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Give the subclass a feed descriptor of its own, so that calls to it are specialised."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ConversationBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "memento_core.hotwords._hotfeed.ConversationBase",
    .tp_doc = "The base class of memento_core.hotwords._detector.Conversation: its compiled feed method.",
    .tp_basicsize = sizeof(ConversationBaseObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_traverse = (traverseproc)ConversationBase_traverse,
    .tp_clear = (inquiry)ConversationBase_clear,
    .tp_dealloc = (destructor)ConversationBase_dealloc,
    .tp_methods = ConversationBase_methods,
};

static struct PyModuleDef hotfeed_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "memento_core.hotwords._hotfeed",
    .m_doc = "The compiled fast path of memento_core.hotwords._detector.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__hotfeed(void)
{
    init_ascii_folded();
    str_feed = PyUnicode_InternFromString("_feed");
    str_feed_compiled = PyUnicode_InternFromString("_feed_compiled");
    str_fire = PyUnicode_InternFromString("_fire");
    str_feed_name = PyUnicode_InternFromString("feed");
    if (!str_feed || !str_feed_compiled || !str_fire || !str_feed_name || PyType_Ready(&AutomatonType) < 0 ||
        PyType_Ready(&ScannerType) < 0 || PyType_Ready(&ConversationBaseType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&hotfeed_module);
    if (!module)
        return NULL;
    Py_INCREF(&AutomatonType);
    if (PyModule_AddObject(module, "Automaton", (PyObject *)&AutomatonType) < 0) {
        Py_DECREF(&AutomatonType);
        Py_DECREF(module);
        return NULL;
    }
    /* Scanner is reachable as type(automaton.scanner(...)); it has no constructor. */
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(module, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&ConversationBaseType);
    if (PyModule_AddObject(module, "ConversationBase", (PyObject *)&ConversationBaseType) < 0) {
        Py_DECREF(&ConversationBaseType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
