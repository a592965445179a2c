"""
    Acc

Compile ordinary Julia loop nests with the polyhedral middle-end of this repository.

```julia
using Acc

@acc function bicg!(s::Vector{Float64}, q::Vector{Float64}, A::Matrix{Float64},
                    p::Vector{Float64}, r::Vector{Float64})
    @schedule interchange(S, i, j)
    for i in 1:size(A, 1), j in 1:size(A, 2)
        @name S s[j] += r[i] * A[i, j]
    end
end

bicg!(s, q, A, p, r)        # compiled on first call for these argument types, then ccall
bicg!_julia(s, q, A, p, r)  # the same function as plain Julia, for reference
```

`@acc` does not interpret the function in Julia: it serializes the function's `Expr` to
JSON (`_json`), and on the first call for each combination of argument types hands it to
the Python side (`frontends.julia.bridge.compile_for_julia`, through PythonCall), which
translates it, compiles a C kernel and says how to call it. The kernel is then called with
`ccall` on the Julia arrays themselves (column-major, no copy).

The Python side must be importable from the Python that PythonCall runs: point
`JULIA_PYTHONCALL_EXE` at the repository's `.venv/bin/python` and set
`JULIA_CONDAPKG_BACKEND=Null` so that CondaPkg does not install a Python of its own.
Calls into Python must happen on Julia's main thread (a PythonCall rule), which matters
only on the first call of an `@acc` function for new argument types.
"""
module Acc

using Libdl
using PythonCall

export @acc, @name, @schedule

# -------------------------------------------------------------------------- annotations

"""
    @name S stmt

Label `stmt` as statement `S`, for the `@schedule` directives of the enclosing `@acc`
function. `@acc` reads the label from the function's `Expr`; as Julia code the macro is
just `stmt`, so the annotated function still runs as plain Julia.
"""
macro name(label, stmt)
    label isa Symbol || throw(ArgumentError("@name needs a label and a statement: @name S stmt"))
    return esc(stmt)
end

"""
    @schedule directive(args...)
    @schedule begin directives... end

Scheduling directives of the enclosing `@acc` function (`tile(S, i, j, 32, 32)`,
`parallelize(S, i0)`, ...), read by the middle-end from the function's `Expr`. As Julia code
it does nothing: the schedule changes how the kernel runs, never what it computes.
"""
macro schedule(args...)
    return nothing
end

# ------------------------------------------------------- the Expr as JSON for fromjson.py

"""
    _json(io, x)

Write `x`, a piece of an `Expr`, as the JSON that `frontends/julia/fromjson.py` reads:
`{"head": ..., "args": [...]}` for an `Expr`, `{"sym": name}`, `{"line": n}`,
`{"quote": x}`, `{"int": n}` (with `"type"` when not Int64), `{"float": x, "type": T}`
(`"Inf"`, `"-Inf"`, `"NaN"` as strings), `{"bool": b}`, `{"str": s}`, `{"nothing": true}`,
and `{"unknown": T}` for anything else. Hand-written rather than JSON.jl: the format is tiny
and fixed, and a dependency less is a version conflict less in the user's environment.
"""
function _json(io::IO, ex::Expr)
    print(io, "{\"head\":")
    _jstr(io, string(ex.head))
    print(io, ",\"args\":[")
    for (i, a) in enumerate(ex.args)
        i > 1 && print(io, ',')
        _json(io, a)
    end
    print(io, "]}")
end
_json(io::IO, s::Symbol) = (print(io, "{\"sym\":"); _jstr(io, string(s)); print(io, '}'))
_json(io::IO, g::GlobalRef) = _json(io, g.name)  # the name is what the source said
_json(io::IO, n::LineNumberNode) = print(io, "{\"line\":", n.line, '}')
_json(io::IO, q::QuoteNode) = (print(io, "{\"quote\":"); _json(io, q.value); print(io, '}'))
_json(io::IO, b::Bool) = print(io, "{\"bool\":", b ? "true" : "false", '}')
_json(io::IO, n::Int64) = print(io, "{\"int\":", string(n), '}')
function _json(io::IO, n::Integer)  # UInt8 from 0xff, Int32 in macro-made code, ...
    print(io, "{\"int\":", string(n; base = 10), ",\"type\":")
    _jstr(io, string(typeof(n)))
    print(io, '}')
end
_json(io::IO, x::Float64) = _jfloat(io, x, repr(x), "Float64")
# repr(2.5f0) is "2.5f0": the shortest digits that give back the Float32; "2.5e0" is JSON
_json(io::IO, x::Float32) = _jfloat(io, x, replace(repr(x), 'f' => 'e'), "Float32")
_json(io::IO, x::AbstractFloat) = _jfloat(io, x, repr(Float64(x)), string(typeof(x)))
_json(io::IO, s::AbstractString) = (print(io, "{\"str\":"); _jstr(io, s); print(io, '}'))
_json(io::IO, ::Nothing) = print(io, "{\"nothing\":true}")
function _json(io::IO, x)
    print(io, "{\"unknown\":")
    _jstr(io, string(typeof(x)))
    print(io, '}')
end

"""
    _jfloat(io, x, text, typ)

A float node; `text` is `x` as a JSON number, used when `x` is finite (JSON has no
Inf/NaN, so those are strings Python maps back).
"""
function _jfloat(io::IO, x::AbstractFloat, text::AbstractString, typ::AbstractString)
    print(io, "{\"float\":")
    if isnan(x)
        print(io, "\"NaN\"")
    elseif isinf(x)
        print(io, x > 0 ? "\"Inf\"" : "\"-Inf\"")
    else
        print(io, text)
    end
    print(io, ",\"type\":")
    _jstr(io, typ)
    print(io, '}')
end

"""
    _jstr(io, s)

`s` as a JSON string: quotes, backslashes and control characters escaped; other
characters (`÷`, `≤`, identifiers in Unicode) written as UTF-8, which JSON allows. An
invalid UTF-8 sequence becomes U+FFFD rather than breaking the whole document.
"""
function _jstr(io::IO, s::AbstractString)
    print(io, '"')
    for c in s
        if !isvalid(c)
            print(io, "\\ufffd")
        elseif c == '"'
            print(io, "\\\"")
        elseif c == '\\'
            print(io, "\\\\")
        elseif c == '\n'
            print(io, "\\n")
        elseif c == '\r'
            print(io, "\\r")
        elseif c == '\t'
            print(io, "\\t")
        elseif c < ' ' || c == '\x7f'
            print(io, "\\u", string(UInt32(c); base = 16, pad = 4))
        else
            print(io, c)
        end
    end
    print(io, '"')
end

"""
    tojson(ex) -> String

The JSON text of `ex` (see `_json`): what `@acc` hands to Python, also handy to look at.
"""
tojson(ex) = sprint(_json, ex)

# ----------------------------------------------------------------------- the @acc macro

"""
    _macroname(m) -> Union{Symbol, Nothing}

The name of a macro as it appears in a `:macrocall` (`@name`, `Acc.@name`, or a
`GlobalRef` in macro-generated code), without its module.
"""
function _macroname(m)
    m isa Symbol && return m
    m isa GlobalRef && return m.name
    if m isa Expr && m.head === :. && length(m.args) == 2 && m.args[2] isa QuoteNode
        return m.args[2].value isa Symbol ? m.args[2].value : nothing
    end
    return nothing
end

"""
    _strip_directives(ex)

`ex` without `@name S` labels (the statement stays) and `@schedule` directives (gone), for
the reference copy `f_julia`: it then does not depend on `@name`/`@schedule` resolving in
the caller's module (a user may `import Acc` and write `Acc.@acc` only).
"""
function _strip_directives(ex)
    ex isa Expr || return ex
    if ex.head === :macrocall
        name = _macroname(ex.args[1])
        name === Symbol("@name") && return _strip_directives(ex.args[end])
        name === Symbol("@schedule") && return nothing
    end
    return Expr(ex.head, map(_strip_directives, ex.args)...)
end

"""
    _options(opts) -> (target, use_schedule)

`@acc`'s options: `target="cpu"` (the middle-end's backend) and `schedule=false` (ignore
the `@schedule` directives: the same code, unscheduled, e.g. to measure what they bring).
"""
function _options(opts)
    target, use_schedule = "cpu", true
    for o in opts
        if o isa Expr && o.head in (:(=), :kw) && length(o.args) == 2
            key, val = o.args
            if key === :target && val isa String
                target = val
                continue
            elseif key === :schedule && val isa Bool
                use_schedule = val
                continue
            end
        end
        throw(ArgumentError("@acc: unknown option $(repr(o)); the options are " *
                            "target=\"cpu\" and schedule=false"))
    end
    return target, use_schedule
end

"""
    _signature(fdef) -> (name, args, argnames)

The name, the argument expressions (kept as written, so the compiled method dispatches
exactly like the original) and the argument names of `function f(args...) ... end`.
Refused here, at macro-expansion time, what the kernel cannot take: keyword arguments,
defaults, varargs, `where` clauses, short-form definitions.
"""
function _signature(fdef)
    if !(fdef isa Expr && fdef.head === :function && length(fdef.args) == 2)
        throw(ArgumentError("@acc applies to a `function f(args...) ... end` definition"))
    end
    sig = fdef.args[1]
    if sig isa Expr && sig.head === :(::)  # function f(x)::Nothing
        sig = sig.args[1]
    end
    if !(sig isa Expr && sig.head === :call && sig.args[1] isa Symbol)
        throw(ArgumentError("@acc: expected a signature f(args...) without a where clause, " *
                            "got $(sig)"))
    end
    name = sig.args[1]::Symbol
    args = sig.args[2:end]
    argnames = Symbol[]
    for a in args
        if a isa Symbol
            push!(argnames, a)
        elseif a isa Expr && a.head === :(::) && length(a.args) == 2 && a.args[1] isa Symbol
            push!(argnames, a.args[1])
        else
            throw(ArgumentError("@acc $(name): unsupported argument $(a) (only positional " *
                                "arguments, typed or not)"))
        end
    end
    return name, args, argnames
end

"""
    @acc [target="cpu"] [schedule=false] function f(args...) ... end

Compile `f` with the middle-end. Defines

- `f(args...)`: on each call, looks up the kernel built for the argument types (building it
  on the first call: Python translates and compiles, see `_compile`), checks the arguments
  and calls it with `ccall`; returns `nothing`;
- `f_julia(args...)`: the original function as plain Julia (`@name`/`@schedule` removed),
  to compare with or to fall back on.

The built kernels live in a `const` cache created by this expansion, one per `@acc`
function: a per-function binding rather than one module-level table, so two `@acc`
functions (or two definitions of one) never share or evict each other's entries.
"""
macro acc(args...)
    isempty(args) && throw(ArgumentError("@acc needs a function definition"))
    target, use_schedule = _options(args[1:end-1])
    fdef = args[end]
    name, sigargs, argnames = _signature(fdef)
    json = tojson(fdef)
    fresh() = map(a -> a isa Expr ? copy(a) : a, sigargs)  # no Expr shared by two methods
    refdef = Expr(:function, Expr(:call, Symbol(name, "_julia"), fresh()...),
                  _strip_directives(fdef.args[2]))
    cache = gensym(Symbol(name, "_kernels"))
    run = Expr(:call, GlobalRef(Acc, :_run), cache, json, target, use_schedule,
               string(name), Expr(:tuple, argnames...))
    wrapper = Expr(:function, Expr(:call, name, fresh()...),
                   Expr(:block, __source__, run, :(return nothing)))
    return esc(Expr(:block,
        Expr(:const, Expr(:(=), cache, Expr(:call, GlobalRef(Acc, :KernelCache)))),
        refdef,
        # a docstring written before `@acc function ...` documents the compiled method
        Expr(:macrocall, GlobalRef(Core, Symbol("@__doc__")), __source__, wrapper)))
end

# ---------------------------------------------------------------- built kernels, calls

"""Where an `Int64` kernel parameter comes from: `size(args[arg], dim)`, or the integer
argument `args[arg]` itself when `dim == 0`."""
struct ParamSource
    arg::Int
    dim::Int
end

"""A pointer the kernel takes: the data of `args[arg]`, whose element type must be
`eltype` (a scalar argument is passed as a pointer to a one-element copy)."""
struct BufferSpec
    arg::Int
    eltype::DataType
end

"""One built kernel: the entry point, how to compute its arguments from the Julia ones, the
messages of its error codes, and `invoker`, a function that `ccall`s it with the right
number of arguments (built once per kernel, see `_invoker`)."""
struct Kernel
    library::String
    symbol::String
    fptr::Ptr{Cvoid}
    params::Vector{ParamSource}
    buffers::Vector{BufferSpec}
    messages::Dict{String,String}
    invoker::Function
end

"""The kernels of one `@acc` function, by specialization: the `string(typeof(a))` of its
arguments and the JSON of their values that the build depends on (`_argvalues`). The lock
keeps two tasks from building the same entry twice."""
struct KernelCache
    lock::ReentrantLock
    entries::Dict{Tuple{Vector{String},String},Kernel}
end
KernelCache() = KernelCache(ReentrantLock(), Dict{Tuple{Vector{String},String},Kernel}())

"""An error code returned by a kernel (a data-dependent index out of bounds, a failed
allocation, ...), with the message the middle-end gave for it."""
struct AccKernelError <: Exception
    kernel::String
    code::Int
    message::String
end
Base.showerror(io::IO, e::AccKernelError) =
    print(io, "AccKernelError: ", e.message, " (", e.kernel, " returned ", e.code, ")")

"""The element types a buffer may have, by the name the bridge gives. A tuple, not a Dict:
read-only module state."""
const _ELTYPES = (Float64, Float32, Int64, Int32, Int16, Int8, UInt64, UInt32, UInt16, UInt8,
                  Bool)

"""The Julia element type the bridge names (`"Float64"`, ...)."""
function _eltype(name::AbstractString)
    for T in _ELTYPES
        string(T) == name && return T
    end
    error("Acc: the bridge asked for element type $(name), which Acc does not know")
end

"""
    _argvalues(args) -> String

What the build is specialized on besides the types, as the JSON list the bridge takes
(`arg_values`): the sizes of each array argument (Julia order), the value of each integer
argument, `null` for the others (Float and Bool scalars are passed at run time). The middle-end
compiles sizes and integer arguments in as constants, which gives ISL exact bounds; so these
values are part of the cache key, like the types.
"""
function _argvalues(args::Tuple)
    io = IOBuffer()
    print(io, '[')
    for (i, a) in enumerate(args)
        i > 1 && print(io, ',')
        if a isa AbstractArray
            print(io, '[')
            join(io, size(a), ',')
            print(io, ']')
        elseif a isa Integer && !(a isa Bool)
            print(io, string(a; base = 10))
        else
            print(io, "null")
        end
    end
    print(io, ']')
    return String(take!(io))
end

"""
    _run(cache, json, target, use_schedule, fname, args)

What an `@acc` method does on each call: find (or build) the kernel for the arguments'
specialization, then call it.
"""
function _run(cache::KernelCache, json::String, target::String, use_schedule::Bool,
              fname::String, args::Tuple)
    key = (String[string(typeof(a)) for a in args], _argvalues(args))
    kernel = lock(cache.lock) do
        get!(cache.entries, key) do
            _compile(json, key[1], key[2], target, use_schedule, fname, length(args))
        end
    end
    _launch(kernel, fname, args)
    return nothing
end

"""
    _compile(json, typestrs, values, target, use_schedule, fname, nargs) -> Kernel

Ask Python (`frontends.julia.bridge.compile_for_julia`) to build the kernel, and load it.
The reply is JSON text, decoded with Python's own `json` so that Acc needs no JSON package:
`{"library", "symbol", "params": [{"name", "from": ["size", k, d] | ["arg", k]}],
"buffers": [{"arg", "eltype", "scalar"}], "messages": {"code": "text"}}`, positions
1-based; the C function takes the `Int64` params, then the buffers' pointers. Errors raised
in Python (an unsupported construct, with its line) arrive as a `PythonCall.PyException`
and propagate as they are.
"""
function _compile(json::String, typestrs::Vector{String}, values::String, target::String,
                  use_schedule::Bool, fname::String, nargs::Int)
    bridge = pyimport("frontends.julia.bridge")
    reply = bridge.compile_for_julia(json, pylist(typestrs), target, use_schedule, values)
    entry = pyimport("json").loads(pyconvert(String, reply))
    bad(what) = error("Acc: the bridge's reply for $(fname) has $(what): " *
                      pyconvert(String, reply))
    params = ParamSource[]
    for p in entry["params"]
        from = p["from"]  # a Python list: indexing is Python's, 0-based
        pyis(from, pybuiltins.None) && bad("a parameter without a source")
        kind, k = pyconvert(String, from[0]), pyconvert(Int, from[1])
        dim = kind == "size" ? pyconvert(Int, from[2]) : kind == "arg" ? 0 : bad("source $kind")
        1 <= k <= nargs || bad("argument position $k")
        push!(params, ParamSource(k, dim))
    end
    buffers = BufferSpec[]
    for b in entry["buffers"]
        k = pyconvert(Int, b["arg"])
        1 <= k <= nargs || bad("buffer argument position $k")
        push!(buffers, BufferSpec(k, _eltype(pyconvert(String, b["eltype"]))))
    end
    messages = Dict{String,String}()
    texts = entry.get("messages")  # optional: None when absent
    if !pyis(texts, pybuiltins.None)
        for (code, text) in texts.items()
            messages[pyconvert(String, code)] = pyconvert(String, text)
        end
    end
    library, symbol = pyconvert(String, entry["library"]), pyconvert(String, entry["symbol"])
    fptr = Libdl.dlsym(Libdl.dlopen(library), symbol)
    return Kernel(library, symbol, fptr, params, buffers, messages,
                  _invoker(length(params), length(buffers)))
end

"""
    _invoker(nparams, nbuffers) -> Function

`(fp, a1, ..., an) -> ccall(fp, Cint, (Int64, ..., Ptr{Cvoid}, ...), a1, ..., an)`.
`ccall` needs its argument types written out where it is compiled, and the arity is only
known once Python has built the kernel, so the closure is evaluated here, once per kernel,
and called with `Base.invokelatest` (it is newer than the calling code). Evaluating into
Acc at run time is fine; it only must not happen while another package precompiles.
"""
function _invoker(nparams::Int, nbuffers::Int)
    names = [Symbol(:a, i) for i in 1:(nparams + nbuffers)]
    types = vcat(fill(:Int64, nparams), fill(:(Ptr{Cvoid}), nbuffers))
    call = Expr(:call, :ccall, :fp, :Cint, Expr(:tuple, types...), names...)
    lambda = Expr(:->, Expr(:tuple, :(fp::Ptr{Cvoid}), names...), Expr(:block, call))
    return Core.eval(@__MODULE__, lambda)
end

"""
    _check_buffer(a, b, fname) -> the array to pass

The kernel indexes the data column-major with the sizes it was given, so only a dense
`Array` of the expected element type is safe to pass: a view, a transpose or a range
would be read wrong, silently. A scalar argument becomes a one-element `Vector`.
"""
function _check_buffer(a, b::BufferSpec, fname::String)
    if a isa Number
        a isa b.eltype || throw(ArgumentError("$(fname): argument $(b.arg) must be a " *
                                              "$(b.eltype), got $(typeof(a))"))
        T = b.eltype
        return T[a]
    end
    a isa Array || throw(ArgumentError(
        "$(fname): argument $(b.arg) must be a dense Array (not a view or a wrapper), got " *
        "$(typeof(a)); pass copy(x) or collect(x)"))
    eltype(a) === b.eltype || throw(ArgumentError(
        "$(fname): argument $(b.arg) must have element type $(b.eltype), got $(eltype(a))"))
    expected = 1
    for d in 1:ndims(a)  # always so for an Array: checked because the kernel relies on it
        stride(a, d) == expected || throw(ArgumentError(
            "$(fname): argument $(b.arg) is not column-major contiguous"))
        expected *= size(a, d)
    end
    return a
end

"""
    _check_overlap(arrays, kernel, fname)

The kernel's pointers are `restrict`: the compiler may assume no two of them reach the same
memory, so the same array passed twice (or two `reshape`s of one) could give wrong results.
The bridge does not say which are written, so any overlap is refused.
"""
function _check_overlap(arrays::Vector{Any}, k::Kernel, fname::String)
    for i in eachindex(arrays), j in 1:(i - 1)
        a, b = arrays[i], arrays[j]
        (isempty(a) || isempty(b)) && continue
        lo_a, lo_b = UInt(pointer(a)), UInt(pointer(b))
        if lo_a < lo_b + sizeof(b) && lo_b < lo_a + sizeof(a)
            throw(ArgumentError("$(fname): arguments $(k.buffers[j].arg) and " *
                                "$(k.buffers[i].arg) share memory, which the kernel " *
                                "assumes they do not; pass a copy"))
        end
    end
end

"""
    _launch(kernel, fname, args)

Compute the kernel's parameters and pointers from the Julia arguments, call it with the
arrays kept alive (`GC.@preserve`), and turn a nonzero return code into an
`AccKernelError`.
"""
function _launch(k::Kernel, fname::String, args::Tuple)
    np = length(k.params)
    vals = Vector{Any}(undef, np + length(k.buffers))
    for (i, p) in enumerate(k.params)
        a = args[p.arg]
        if p.dim == 0
            a isa Integer || throw(ArgumentError(
                "$(fname): argument $(p.arg) must be an integer, got $(typeof(a))"))
            vals[i] = Int64(a)
        else
            a isa AbstractArray || throw(ArgumentError(
                "$(fname): argument $(p.arg) must be an array, got $(typeof(a))"))
            vals[i] = Int64(size(a, p.dim))
        end
    end
    keep = Vector{Any}(undef, length(k.buffers))
    for (j, b) in enumerate(k.buffers)
        keep[j] = _check_buffer(args[b.arg], b, fname)
        vals[np + j] = Ptr{Cvoid}(pointer(keep[j]))
    end
    _check_overlap(keep, k, fname)
    rc = GC.@preserve keep Base.invokelatest(k.invoker, k.fptr, vals...)
    if rc != 0
        msg = get(k.messages, string(rc), "kernel $(k.symbol) failed")
        throw(AccKernelError(fname, Int(rc), msg))
    end
    return nothing
end

end # module Acc
