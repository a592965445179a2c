# The Julia kernels of the paper's section 5.2 and a few more PolyBench ones, written as
# ordinary Julia loops (column-major: the first index is the contiguous one) with `@acc`
# and a tuned `@schedule`. Loaded by the tests and benchmarks through
# `frontends.julia.compile_source` and, where Julia exists, by the Acc.jl package tests.
# The matrix-product accumulations (atax, mttkrp, doitgen, covariance, 2mm) are written
# with `muladd`, as BLAS-like Julia code is: Julia fuses it on machines with FMA, and so do
# we (the middle-end's `fma`), as numpy's BLAS does on the other side of the benchmarks;
# compiled without fusion (`+=`) they ran 5-8% slower (single-thread CPU time, A/B;
# doitgen, whose tile is bound by the multiply-adds, 1.27 against 0.82x numpy's wall
# time). The register tiles are printed as vectors (backends/cpu/vtile.py), their shapes
# from the machine's vector width and registers.
using Acc

@acc function bicg!(s::Vector{Float64}, q::Vector{Float64}, A::Matrix{Float64},
                    p::Vector{Float64}, r::Vector{Float64})
    n, m = size(A)
    # s = A' r summed per block of 1000 rows into its own column of sp, then the blocks'
    # sums added: the row blocks can then run on different cores while S and Q share
    # one pass over A (numpy's two BLAS calls read A twice; the same multiplies and adds,
    # plus m per extra block)
    sp = zeros(m, cld(n, 1000))
    @schedule begin
        # S and Q fused, column by column (i contiguous), 8 columns per sweep (gcc
        # vectorizes i: Q as an axpy, S's 8 sums in order per column), the blocks of rows
        # over the cores. Two passes before (Q in axpy form, S as 16 dot products at a
        # time): 1.09-1.20 -> 0.77-0.82x numpy's single-thread CPU time (4 and 16
        # columns: 0.90, 0.96), 0.62-0.75x its wall time
        shift(Q, i, -1)
        shift(Q, j, -1)
        shift(S, i, -1)
        shift(S, j, -1)
        split(Q, i, 1000)
        split(S, i, 1000)
        interchange(Q, i1, j)
        interchange(S, i1, j)
        unroll(Q, j, 8)
        unroll(S, j, 8)
        interchange(Q, j_ui, i1)
        interchange(S, j_ui, i1)
        parallelize(Q, i0)
        parallelize(S, i0)
    end
    for i in 1:n
        q[i] = 0.0
    end
    for i in 1:n
        for j in 1:m
            @name S sp[j, 1 + fld(i - 1, 1000)] += r[i] * A[i, j]
            @name Q q[i] += A[i, j] * p[j]
        end
    end
    for j in 1:m
        s[j] = 0.0
    end
    for c in 1:cld(n, 1000), j in 1:m
        @name R s[j] += sp[j, c]
    end
end

@acc function gesummv!(y::Vector{Float64}, tmp::Vector{Float64}, A::Matrix{Float64},
                       B::Matrix{Float64}, x::Vector{Float64}, alpha::Float64, beta::Float64)
    n = size(A, 1)
    # A x and B x summed per block of 1000 columns into its own column of tp / yp, then
    # the blocks' sums added: the column blocks can then run on different cores, each
    # streaming one contiguous part of A and B (the same multiplies and adds, plus 2n
    # per extra block)
    tp = zeros(n, cld(n, 1000))
    yp = zeros(n, cld(n, 1000))
    @schedule begin
        # axpy form (i contiguous, vectorized by gcc), 8 columns per sweep of a partial
        # sum, A's pass, then B's, each in blocks of 1000 columns over the cores. The
        # rows in two halves before (half columns, 8 KB runs, 4 per sweep): 1.18 -> 0.96x
        # numpy's single-thread CPU time, 0.87-0.89x our own wall time before (A/B)
        shift(T, i, -1)
        shift(Y, i, -1)
        shift(T, j, -1)
        shift(Y, j, -1)
        split(T, j, 1000)
        split(Y, j, 1000)
        interchange(T, i, j0)
        interchange(Y, i, j0)
        interchange(T, i, j1)
        interchange(Y, i, j1)
        unroll(T, j1, 8)
        unroll(Y, j1, 8)
        interchange(T, j1_ui, i)
        interchange(Y, j1_ui, i)
        after(Y, T, root)
        parallelize(T, j0)
        parallelize(Y, j0)
    end
    for i in 1:n
        for j in 1:n
            @name T tp[i, 1 + fld(j - 1, 1000)] += A[i, j] * x[j]
            @name Y yp[i, 1 + fld(j - 1, 1000)] += B[i, j] * x[j]
        end
    end
    for i in 1:n
        tmp[i] = 0.0
        y[i] = 0.0
    end
    for c in 1:cld(n, 1000), i in 1:n
        tmp[i] += tp[i, c]
        y[i] += yp[i, c]
    end
    for i in 1:n
        y[i] = alpha * tmp[i] + beta * y[i]
    end
end

@acc function atax!(y::Vector{Float64}, tmp::Vector{Float64}, A::Matrix{Float64},
                    x::Vector{Float64})
    m, n = size(A)
    # A x summed per block of 1050 columns into its own column of tp, then the blocks'
    # sums added: the column blocks can then run on different cores, each streaming one
    # contiguous part of A (the same multiplies and adds, plus m per extra block)
    tp = zeros(m, cld(n, 1050))
    @schedule begin
        # T: axpy form (columns of A, i contiguous, gcc vectorizes i), 8 columns per sweep
        # of a partial sum, the blocks of columns over the cores; shift to 0-based so
        # that the blocks align with the columns and need no guards. The rows in two
        # halves before (half columns, 7.6 KB runs): 1.18 -> 1.08x numpy's single-thread
        # CPU time, 0.94-0.97x our own median wall time before (A/B)
        shift(T, i, -1)
        shift(T, j, -1)
        split(T, j, 1050)
        interchange(T, i, j0)
        interchange(T, i, j1)
        unroll(T, j1, 8)
        interchange(T, j1_ui, i)
        parallelize(T, j0)
        # Y: y = A' tmp as 8 interleaved partial sums per column (yq[c, j] sums the rows
        # i with (i - 1) mod 8 = c - 1, added up after), so that a column's sums are one
        # vector across 8 contiguous rows: a register tile over i0 (8 rows x 4 columns,
        # 4 vector sums; backends/cpu/vtile.py), the blocks of columns over the cores.
        # As in-order dot products (14 columns at a time, scalar sums) it ran 1.23 ms
        # against 1.13 ms so (1.29 -> 1.17-1.19x numpy's wall time in one run); 6, 14
        # columns or 16 interleaved sums: the same or slower
        shift(Y, i, -1)
        shift(Y, j, -1)
        interchange(Y, i, j)
        unroll(Y, j, 4)
        split(Y, i, 8, i0, i1)
        interchange(Y, j_ui, i0)
        parallelize(Y, j_uo)
    end
    for j in 1:n
        y[j] = 0.0
    end
    for i in 1:m
        tmp[i] = 0.0
    end
    for i in 1:m
        for j in 1:n
            @name T tp[i, 1 + fld(j - 1, 1050)] = muladd(A[i, j], x[j], tp[i, 1 + fld(j - 1, 1050)])
        end
    end
    for c in 1:cld(n, 1050), i in 1:m
        tmp[i] += tp[i, c]
    end
    yq = zeros(8, n)
    for i in 1:m
        for j in 1:n
            @name Y yq[1 + mod(i - 1, 8), j] = muladd(A[i, j], tmp[i], yq[1 + mod(i - 1, 8), j])
        end
    end
    for j in 1:n, c in 1:8
        y[j] += yq[c, j]
    end
end

@acc function doitgen!(A::Array{Float64, 3}, C4::Matrix{Float64}, sum::Vector{Float64})
    np, nq, nr = size(A)
    @schedule begin
        # a GEMM (C4' times the columns of A) whose operands both run along s, the
        # reduction: gcc may not reorder a sum, so p must be the vector dim, along which C4
        # is strided: pack reads it through a transposed copy in panels of P p, C4t[p % P,
        # s, p ÷ P] (200 KB, once per call), contiguous in p and, a panel, in s. The
        # register tile is P p x Q q, P two vectors (2 * vector_lanes(Float64): 8 with
        # AVX2, 16 with AVX-512) and Q = vector_registers() ÷ 3 columns of A (5 of 16 ymm,
        # 10 of 32 zmm): 2 Q sum vectors, each pair of C4t vectors used for Q broadcasts
        # of A[s, q, r]. The printer holds the sums in vector variables across s
        # (backends/cpu/vtile.py). On a Sapphire Rapids, against the 8 x 5 tile before
        # (5 zmm sums): 1.40 -> 0.81x numpy's wall time with muladd (fused, as numpy's
        # BLAS is; 2.13x before both). That needs Q sum vectors at once and one set per r
        # for the r loop to run over the cores: store_in(sum, q % Q, r) (Z resets sum in
        # every (q, r): no value crosses them; sum's last values are copied back); q in
        # blocks of Q for Z, U and W alike so that they share the q0 loop
        pack(C4, C4t, 2 % (2 * vector_lanes(Float64)), 1, 2)
        store_in(sum, q % (vector_registers() ÷ 3), r)
        shift(Z, q, -1)
        shift(U, q, -1)
        shift(W, q, -1)
        split(Z, q, vector_registers() ÷ 3, q0, q1)
        split(U, q, vector_registers() ÷ 3, q0, q1)
        split(W, q, vector_registers() ÷ 3, q0, q1)
        shift(U, p, -1)
        split(U, p, 2 * vector_lanes(Float64), p0, p1)
        interchange(U, q1, p0)
        interchange(U, q1, p1)
        interchange(U, p1, s)
        unroll(U, q1)
        parallelize(U, r)
    end
    for r in 1:nr, q in 1:nq
        for p in 1:np
            @name Z sum[p] = 0.0
            for s in 1:np
                @name U sum[p] = muladd(A[s, q, r], C4[s, p], sum[p])
            end
        end
        for p in 1:np
            @name W A[p, q, r] = sum[p]
        end
    end
end

@acc function mttkrp!(A::Matrix{Float64}, B::Array{Float64, 3}, C::Matrix{Float64},
                      D::Matrix{Float64})
    ni, nj = size(A)
    nk, nl = size(B, 2), size(B, 3)
    # the Khatri-Rao product of C and D first, then one contraction with B (a GEMM of B as
    # an ni x (nk nl) matrix), as numpy's formulation does: one multiply per term of the
    # sum instead of two for B[i, k, l] * C[k, j] * D[l, j]
    kr = zeros(nk, nl, nj)
    @schedule begin
        # the rows in two halves over the cores (104 = 13 panels of 8, 96 = 12); in each,
        # for each l, B[rows, :, l] is copied into a buffer that stays in L2 (one
        # contiguous run per column, where the tiles' own reads went down the columns 8
        # values at a time: 1.35 -> 1.18x numpy's single-thread time with 8 x 4 tiles);
        # the copy's loop over the rows is vectorized (the file is built without gcc's
        # loop vectorizer: it has register tiles; 1.20 -> 1.00). The register tile is
        # 8 i x 6 j: i a plain loop of 8 that gcc vectorizes, j unrolled, the 12 sums in
        # registers across k (8 x 6, 8 x 4, 8 x 2: 0.96, 1.16, 1.09x numpy single-thread,
        # the copy over all rows). Before, B * C * D: 1.48x single-thread, 1.4-1.6x wall
        parallelize(KR, j)
        shift(M, i, -1)
        shift(M, j, -1)
        split(M, i, 104)
        split(M, i1, 8)
        split(M, j, 6)
        interchange(M, l, i0)
        interchange(M, i11, j0)
        interchange(M, i11, k)
        unroll(M, j1)
        parallelize(M, i0)
        copy_at(M, l, B, Bp)
        vectorize(Bp, Bp_2, 8)
    end
    for j in 1:nj, l in 1:nl, k in 1:nk
        @name KR kr[k, l, j] = C[k, j] * D[l, j]
    end
    for j in 1:nj, i in 1:ni
        A[i, j] = 0.0
    end
    for l in 1:nl, i in 1:ni, j in 1:nj, k in 1:nk
        @name M A[i, j] = muladd(B[i, k, l], kr[k, l, j], A[i, j])
    end
end

@acc function covariance!(cov::Matrix{Float64}, mean::Vector{Float64},
                          data::Matrix{Float64})
    n, m = size(data)
    @schedule begin
        # C is data' * data: both operands run along k, the reduction, which gcc may not
        # reorder. The register tile is I i x J j, I three vectors (3 * vector_lanes(
        # Float64): 12 with AVX2, 24 with AVX-512), J = vector_registers() ÷ 4 columns (4,
        # 8): 3 J sums (12 of 16 ymm, 24 of 32 zmm) in vector variables across k1
        # (backends/cpu/vtile.py), 3 loads and J broadcasts per 3 J multiply-adds. The
        # vector operand data[k, i:i+I-1] is read from a copy in panels of I columns
        # dataT[i % I, k, i ÷ I] (`2 % I`: a tile's I x 128 block one contiguous run; pack
        # along i); data[k, j] stays where it is, contiguous along k. The j tiles are I
        # wide too, each I x J tile a part of one (j1o): the triangle's diagonal then
        # crosses only the I x I blocks on it, printed with constant panels (no i ÷ I).
        # k in blocks of 512 (the I x 512 panel, 96 KB with AVX-512, stays in L2 across the
        # j1o tiles; each block loads and stores the triangle's sums once), j0 over the
        # cores (the triangle's columns: the pool balances them). On a Zen 4 (AVX-512, 1 MB
        # of L2), blocks of 128 / 512 / 1024 / 1400 (none) took 53-59 / 47 / 47 / 45 ms of
        # single-thread CPU time and 26-30 / 24 / 24-26 / 24 ms of wall time (numpy 25-27
        # ms in the same runs: 0.97-1.15 -> 0.91-0.94x its wall time with 512). On a Sapphire
        # Rapids, against the 8 x 6 tile in blocks of 512 before: 1.92 -> 0.96x numpy's
        # wall time (numpy's syrk does the triangle too), with ZERO and SCALE below
        # (on a Zen 3, AVX2: 12 x 4 in 12 x 12, mm2's 8 x 6 in j tiles of 24 ran at best
        # 10-15% faster on one thread, in runs that vary by 20%, and doubled the build's
        # time, the diagonal crossing the 8 x 6 tiles: not taken)
        pack(data, dataT, 2 % (3 * vector_lanes(Float64)), 1, 2, i)
        shift(C, i, -1)
        shift(C, j, -1)
        shift(C, k, -1)
        tile(C, i, j, k, 3 * vector_lanes(Float64), 3 * vector_lanes(Float64), 512)
        interchange(C, i0, k0)
        split(C, j1, vector_registers() ÷ 4, j1o, j1i)
        interchange(C, i1, j1o)
        interchange(C, i1, k1)
        unroll(C, j1i)
        parallelize(C, j0)
        # the O(n m) and O(m^2) passes over the cores too; the column sums 8 at a time
        # (8 independent chains where one sum's adds waited for each other: 1.18 ->
        # 1.16x numpy's single-thread time)
        shift(MEAN, j, -1)
        unroll(MEAN, j, 8)
        interchange(MEAN, j_ui, i)
        parallelize(MEAN, j_uo)
        # the file has register tiles, so it is built without gcc's loop vectorizer: the
        # loops worth it are vectorized by the schedule; the copy runs panel by panel (8
        # columns read down together, the panel written in order) over the cores, where k
        # outside read 1200 columns a row at a time (the two: 0.96-0.98x of the kernel's
        # single-thread CPU time before)
        parallelize(CENTER, j)
        vectorize(CENTER, i, 4)
        split(dataT, dataT_1, 3 * vector_lanes(Float64))  # the copy in panels: no i ÷ I
        interchange(dataT, dataT_2, dataT_10)
        parallelize(dataT, dataT_10)
        # the zeroing along i, contiguous (cov[i, j] a column apart along j), and the
        # symmetric copy in 32 x 32 blocks (one of its two accesses is strided): 1.13 ->
        # 1.06x numpy's single-thread CPU time
        interchange(ZERO, i, j)
        parallelize(ZERO, j)
        tile(SCALE, i, j, 32, 32)
        parallelize(SCALE, i0)
    end
    for j in 1:m
        mean[j] = 0.0
    end
    for j in 1:m, i in 1:n
        @name MEAN mean[j] += data[i, j]
    end
    for j in 1:m
        mean[j] /= n
    end
    @name CENTER for j in 1:m, i in 1:n
        data[i, j] -= mean[j]
    end
    for i in 1:m
        @name ZERO for j in i:m
            cov[i, j] = 0.0
        end
        for j in i:m
            for k in 1:n
                @name C cov[i, j] = muladd(data[k, i], data[k, j], cov[i, j])
            end
        end
        @name SCALE for j in i:m
            cov[i, j] /= (n - 1)
            cov[j, i] = cov[i, j]
        end
    end
end

@acc function mm2!(D::Matrix{Float64}, tmp::Matrix{Float64}, A::Matrix{Float64},
                   B::Matrix{Float64}, C::Matrix{Float64}, alpha::Float64, beta::Float64)
    ni, nk = size(A)
    nj = size(B, 2)
    nl = size(C, 2)
    @schedule begin
        # both products as a BLAS micro-kernel: an I x J tile of the result, I of m
        # vectors (m = 1 + vector_registers() ÷ 16: 2 with AVX2's 16 registers, 3 with
        # AVX-512's 32) of a plain i loop and J = 4 + vector_registers() ÷ 8 columns (6,
        # 8) unrolled: 8 x 6 with AVX2, 24 x 8 with AVX-512. m J sums (12 of 16 ymm, 24
        # of 32 zmm) in vector variables across k1, stored once per k block
        # (backends/cpu/vtile.py); m loads and J broadcasts per m J multiply-adds, the m
        # loads kept in registers beside the sums and one broadcast (a 12 x 4 tile on
        # AVX2 leaves none: gcc then loads A's vectors again for every column, 16 loads
        # per 12 multiply-adds, 1.41x numpy's single-thread time on a Zen 3 against
        # 0.96-1.07 for 8 x 6). The column tiles over the cores. The vector operands (A,
        # then tmp) are read from copies packed in panels of I rows and 128 k (`1 % I,
        # 2 % 128`: a k block's panels follow one another, one contiguous run for all the
        # row tiles of a column tile), made once per call, over the cores; k in blocks
        # of 128, so that the I x 128 panels of one k block (800 KB) stay in L2 for all
        # the column tiles where L2 holds them. On a Sapphire Rapids, against 8 x 24 in
        # blocks of 1024 before: 1.11 -> 0.83-0.86x numpy's wall time (blocks of 1024 /
        # 384 / 256 / 192 / 96 / 64 with the new tile: 1.36 / 1.07 / 0.92 / 0.86 / 0.86 /
        # 0.90). On the Zen 3 (512 KB of L2), with panels of I rows only, blocks of 128 /
        # 256 / 512 / 1024 gave 1.10 / 1.04 / 0.91 / 0.89 (the panels' runs as long as a
        # block: the prefetcher's streams); with the blocks' panels contiguous, 128 is
        # as fast as 512 (0.96 / 0.95)
        pack(A, Ap, 1 % ((1 + vector_registers() ÷ 16) * vector_lanes(Float64)), 2 % 128, 1, 2)
        pack(tmp, tmpP, 1 % ((1 + vector_registers() ÷ 16) * vector_lanes(Float64)), 2 % 128, 1, 2)
        parallelize(Ap, Ap_2)
        parallelize(tmpP, tmpP_2)
        shift(T, i, -1)
        shift(T, j, -1)
        shift(T, k, -1)
        tile(T, i, j, k, (1 + vector_registers() ÷ 16) * vector_lanes(Float64), 4 + vector_registers() ÷ 8, 128)
        interchange(T, i0, k0)
        interchange(T, i1, k1)
        unroll(T, j1)
        parallelize(T, j0)
        shift(E, i, -1)
        shift(E, j, -1)
        shift(E, k, -1)
        tile(E, i, j, k, (1 + vector_registers() ÷ 16) * vector_lanes(Float64), 4 + vector_registers() ÷ 8, 128)
        interchange(E, i0, k0)
        interchange(E, i1, k1)
        unroll(E, j1)
        parallelize(E, j0)
        parallelize(SC, j)
        vectorize(SC, i, 8)
    end
    for j in 1:nj, i in 1:ni
        tmp[i, j] = 0.0
    end
    # alpha * (A * B) as numpy formulates it: the product, then one pass scaling it (alpha
    # in every term cost one more multiply per column of A in the tile, 1.06-1.15 ->
    # 0.99-1.02x numpy's single-thread time)
    for i in 1:ni, j in 1:nj, k in 1:nk
        @name T tmp[i, j] = muladd(A[i, k], B[k, j], tmp[i, j])
    end
    for j in 1:nj, i in 1:ni
        @name SC tmp[i, j] *= alpha
    end
    for j in 1:nl, i in 1:ni
        D[i, j] *= beta
    end
    for i in 1:ni, j in 1:nl, k in 1:nj
        @name E D[i, j] = muladd(tmp[i, k], C[k, j], D[i, j])
    end
end

@acc function jacobi1d!(A::Vector{Float64}, B::Vector{Float64}, tsteps::Int)
    n = length(A)
    @schedule begin
        vectorize(SB, i, 8)
        vectorize(SA, i, 8)
    end
    for t in 1:tsteps
        for i in 2:n-1
            @name SB B[i] = 0.33333 * (A[i-1] + A[i] + A[i+1])
        end
        for i in 2:n-1
            @name SA A[i] = 0.33333 * (B[i-1] + B[i] + B[i+1])
        end
    end
end
