"""The query layer: expressions compiled safely, evaluated block by block, planned over tables.

One concern per module, each importing only those above it in this list:

* :mod:`~bcolzx._query.tree`: the expression language (nodes, operators,
  the functions an expression may call);
* :mod:`~bcolzx._query.kinds`: numexpr's typing and each operation typed
  as numexpr types it;
* :mod:`~bcolzx._query.pyvm`: the python virtual machine (a tree on NumPy
  arrays);
* :mod:`~bcolzx._query.parse`: text to tree (whitelist, precedence trap,
  constant folding);
* :mod:`~bcolzx._query.numexpr_vm`: the numexpr virtual machine
  (translation, cached plans);
* :mod:`~bcolzx._query.expr`: :func:`~bcolzx._query.expr.compile_expression`
  and the :class:`~bcolzx._query.expr.Expression` both VMs evaluate;
* :mod:`~bcolzx._query.textscan`: tests of string columns against strings,
  answered from the columns' chunks;
* :mod:`~bcolzx._query.zonemap`: whether a block can match, from its
  columns' bounds;
* :mod:`~bcolzx._query.blocks`: evaluation over columns, block by block, on
  a thread pool;
* :mod:`~bcolzx._query.scope`: where the names of an expression get their
  values (needs no other module);
* :mod:`~bcolzx._query.evaluate`: an expression over whole operands, as
  ``bcolzx.eval`` computes it (flavors, reductions, string keys' masks), and
  the ``vm='dask'`` engine, loaded on first use;
* :mod:`~bcolzx._query.planner`: a table's queries (a condition's operands,
  zone-map skipping, the matching rows with skip and limit).

The package imports nothing on its own: ``import bcolzx._query.zonemap``
loads that module and those it needs, no more.
"""
