"""The paper's experiments (Teddy, bunny for the Dragon, SAXS, 1-D) on one protocol.

- :mod:`.problem` -- observations, test set, training draws and the distances of one trial;
- :mod:`.models` -- the GP models compared, as ``ModelSpec`` factories;
- :mod:`.fitting` -- MAP and NUTS fits of one model on one trial, scored;
- :mod:`.runner` -- the resumable, parallel run and the scripts' command line;
- :mod:`.summary` -- paper-layout tables and figures from the per-trial CSV;
- :mod:`.render` -- predictions drawn on a mesh.
"""
