"""An SMT (z3) encoding of the reference model, checked against it: the state as z3 terms
(``state``), one transition per step kind (``actions``) under each variant's rules
(``protocols``), every property as a formula (``properties``), and the engines over it:
bounded model checking and k-induction (``bmc``). This package alone imports z3."""
