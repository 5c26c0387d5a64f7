"""The generated saddle-point map of the general model (symattn/compile/general_equations.py)
against the derivation it is printed from, evaluated by SymPy, and at the paper's shape against
the paper's equations (symattn/symbolic/free_energy.py, an independent derivation)."""

import numpy as np
import pytest
import sympy as sp

from symattn.compile import kernels
from symattn.compile.general_equations import atoms_of, free_entries_of, general_equations
from symattn.compile.shape import Shape
from symattn.model.symbols import alpha, lam, rho, sigma
from symattn.symbolic.general import derive_general_saddle_point, free_entries

SHAPES = [Shape(2, 1, 1), Shape(2, 2, 1), Shape(3, 1, 1)]


def _point(eq, rng):
    """Random values for every symbol of the derivation's equations (rationals, so that
    SymPy's value is exact before it is rounded once)."""
    s = eq.symbols
    rat = lambda: sp.Rational(int(rng.integers(-40, 40)), 37)   # noqa: E731
    pos = lambda: sp.Rational(int(rng.integers(5, 60)), 23)     # noqa: E731
    vals = {}
    for X in (s.M, s.theta, s.M_hat, s.theta_hat, s.q_hat, s.V_hat, s.Pi):
        vals.update({x: rat() for x in free_entries(X)})
    for X in (eq.KiT, eq.BiT):
        vals.update({X[a, b]: (pos() if a == b else rat())
                     for a in range(X.rows) for b in range(a, X.cols)})
    for X in (s.q, s.V):         # diagonally dominant: positive definite
        vals.update({X[a, b]: (pos() + 3 if a == b else rat() / 5)
                     for a in range(X.rows) for b in range(a, X.cols)})
    vals.update({alpha: pos(), rho: pos(), sigma: pos(), lam: pos() / 50})
    return vals


def _f(values, X):
    return np.array([float(values[x]) for x in X])


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.tag)
def test_generated_map_is_the_derivation(shape):
    """Output, prior, Phi and the prior's theta-Jacobian, printed and compiled, equal the
    derivation's expressions evaluated exactly by SymPy at random points, to 1e-12 relative
    (rounding of a few hundred floating-point operations)."""
    eq = derive_general_saddle_point(shape.L, shape.r, shape.r_t)
    s = eq.symbols
    mod = general_equations(shape)
    atoms = atoms_of(eq)
    assert mod.N_ATOMS == len(atoms)
    rng = np.random.default_rng(shape.L * 10 + shape.r)
    for _ in range(3):
        vals = _point(eq, rng)
        a = {E: sp.Rational(int(rng.integers(-50, 50)), 41) for E in atoms}
        vals_a = {**vals, **a}
        up = lambda X: [vals[X[i, j]] for i in range(X.rows) for j in range(i, X.cols)]  # noqa
        fr = lambda X: [vals[x] for x in free_entries(X)]                                 # noqa
        got = mod.output_equations(np.array([float(a[E]) for E in atoms]),
                                   np.array(up(eq.KiT), float), np.array(up(eq.BiT), float),
                                   np.array(fr(s.q), float), np.array(fr(s.theta), float),
                                   float(vals[alpha]), float(vals[rho]))
        want = [float(e.xreplace(vals_a)) for X in ("q_hat", "M_hat", "theta_hat", "V_hat")
                for e in free_entries_of(eq.output[X], getattr(s, X))]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * max(map(abs, want)))
        args = [np.array(fr(X), float) for X in (s.q_hat, s.M_hat, s.theta_hat, s.V_hat, s.Pi)]
        got = mod.prior_equations(*args, float(vals[sigma]), float(vals[lam]), float(vals[rho]))
        want = [float(e.xreplace(vals)) for X in ("q", "M", "theta", "V")
                for e in free_entries_of(eq.prior[X], getattr(s, X))]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * max(map(abs, want)))
        EM = sp.Rational(7, 3)
        got = mod.phi(*[np.array(fr(X), float) for X in (s.q, s.M, s.theta, s.V, s.q_hat,
                                                          s.M_hat, s.theta_hat, s.V_hat)],
                      float(EM), np.array(fr(s.Pi), float), float(vals[alpha]),
                      float(vals[sigma]), float(vals[lam]), float(vals[rho]))
        want = float(eq.phi.xreplace({**vals, eq.atoms["EM"]: EM}))
        assert abs(got - want) <= 1e-12 * max(1.0, abs(want))
        th = sp.Matrix([eq.prior["theta"][i, j] for i in range(shape.r_t) for j in range(shape.r)])
        want = [float(e.xreplace(vals)) for e in th.jacobian(list(free_entries(s.theta_hat)))]
        got = mod.prior_theta_jacobian(np.array(fr(s.V_hat), float), float(vals[sigma]),
                                       float(vals[lam]), float(vals[rho]))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def _canonical_paper(E):
    """A paper atom's integrand in the symbols F_l, X_l, E_l (f, xi, eta of token l)."""
    from symattn.symbolic.expectation import OutputF
    arg = E.args[0]
    sub = {F: sp.Symbol(f"F_{int(F.args[0])}") for F in arg.atoms(OutputF)}
    arg = arg.xreplace(sub)
    return arg.xreplace({z: sp.Symbol(("X_" if z.name.startswith("xi") else "E_") + z.name[-1])
                         for z in arg.free_symbols if z.name[:2] in ("xi", "et")})


def _canonical_general(E):
    """A general atom's integrand (rank one) in the same symbols."""
    arg = E.args[0]
    names = {"f": "F", "xi": "X", "eta": "E"}
    return arg.xreplace({z: sp.Symbol(f"{names[z.name.split('_')[0]]}_{z.name.split('{')[1][0]}")
                         for z in arg.free_symbols})


def test_paper_shape_map_is_the_papers():
    """At L = 2, r = r_t = 1 with Pi = s s^T and M = s m the generated general map gives the
    paper's conjugates and prior (the paper's own derivation, kernels.output_equations /
    prior_equations), with m_hat = s^T M_hat and the atoms matched by their integrands; to
    1e-13 relative (rounding)."""
    mod = general_equations(Shape())
    eq = derive_general_saddle_point(2, 1, 1)
    rng = np.random.default_rng(5)
    paper = [_canonical_paper(E) for E in kernels.atom_list()]
    values = {k: rng.normal() for k in paper}
    a = np.array([values[_canonical_general(E)] for E in atoms_of(eq)])
    q, m, th, V, al, rh, sig, la = 0.3, 0.2, 0.05, 12.0, 1.3, 0.25, 0.5, 0.01
    q_hat, M1, M2, th_hat, V_hat = mod.output_equations(
        a, np.array([1 / np.sqrt(q)]), np.array([1 / np.sqrt(rh - th**2 / q)]), np.array([q]),
        np.array([th]), al, rh)
    ph = kernels.output_equations()(*[values[k] for k in paper], q, m, th, V, al, rh)
    np.testing.assert_allclose([q_hat, M1 - M2, th_hat, V_hat], ph, rtol=1e-13)
    x = mod.prior_equations(np.array([ph[0]]), np.array([ph[1] / 2, -ph[1] / 2]),
                            np.array([ph[2]]), np.array([ph[3]]), np.array([1.0, -1.0, 1.0]),
                            sig, la, rh)
    want = kernels.prior_equations()(*ph, sig, la, rh)
    np.testing.assert_allclose([x[0], x[1], x[3], x[4]], want, rtol=1e-13)
    assert abs(x[1] + x[2]) <= 1e-15 * abs(x[1])       # M = s m


def test_paper_equations_in_the_solvers_are_the_papers():
    """The solvers' map at the paper's shape (``Coordinates``: the generated general map in
    ``x = (q, m, theta, V)``, ``M = s m``, ``m_hat = s^T M_hat``) against the paper's own
    derivation's equations (kernels.output_equations, prior_equations, phi_kernel) at random
    points, the atoms matched by name: to 1e-13 relative (rounding; the two print different
    but equal expressions)."""
    from symattn.model import ModelParams
    from symattn.numerics.coordinates import Coordinates
    p = ModelParams()
    c = Coordinates(p)
    order = [c.atom_keys.index(k) for k in kernels.equations_module().ATOM_KEYS]
    assert c.names == ("q", "m", "theta", "V") and c.P.ravel().tolist() == [1.0, -1.0]
    rng = np.random.default_rng(11)
    for _ in range(5):
        paper_atoms = rng.normal(size=8) * 0.01
        atoms = np.empty(8)
        atoms[order] = paper_atoms
        x = (0.05 + 0.1 * rng.random(), 0.3 * rng.random(), 0.1 * rng.random(), 15 + rng.random())
        alpha = 0.5 + rng.random()
        got = c.output(atoms, np.array(x), alpha)
        want = kernels.output_equations()(*paper_atoms, *x, alpha, p.rho)
        np.testing.assert_allclose(got, want, rtol=1e-13)
        np.testing.assert_allclose(c.prior(np.array(want, float)),
                                   kernels.prior_equations()(*want, p.sigma, p.lam, p.rho),
                                   rtol=1e-13)
        args = (*x, *want, 0.3, alpha, p.sigma, p.lam, p.rho)
        got_phi = c.phi(np.array(x), np.array(want, float), 0.3, alpha)
        assert abs(got_phi - kernels.phi_kernel()(*args)) <= 1e-13 * abs(got_phi)
