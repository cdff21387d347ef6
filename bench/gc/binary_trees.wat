;; bench/gc/binary_trees.wat — the binary-trees kernel (Computer Language Benchmarks
;; Game shape) over WasmGC structs: a stretch tree of depth max+1, a long-lived tree
;; of depth max, and 2^(max-d+4) short-lived trees of each even depth d from 4 to max,
;; each checked by a full traversal. run(max) returns the sum of all node counts.
(module
  (type $node (struct (field $l (ref null $node)) (field $r (ref null $node))))

  (func $make (param $d i32) (result (ref $node))
    (if (result (ref $node)) (i32.eqz (local.get $d))
      (then (struct.new $node (ref.null $node) (ref.null $node)))
      (else
        (struct.new $node (call $make (i32.sub (local.get $d) (i32.const 1)))
                          (call $make (i32.sub (local.get $d) (i32.const 1)))))))

  (func $check (param $t (ref $node)) (result i32)
    (local $l (ref null $node))
    (local.set $l (struct.get $node $l (local.get $t)))
    (if (result i32) (ref.is_null (local.get $l))
      (then (i32.const 1))
      (else
        (i32.add (i32.const 1)
          (i32.add (call $check (ref.as_non_null (local.get $l)))
                   (call $check (ref.as_non_null (struct.get $node $r (local.get $t)))))))))

  (func (export "run") (param $max i32) (result i32)
    (local $total i32) (local $long (ref $node)) (local $d i32) (local $n i32) (local $i i32)
    (local.set $total (call $check (call $make (i32.add (local.get $max) (i32.const 1)))))
    (local.set $long (call $make (local.get $max)))
    (local.set $d (i32.const 4))
    (block $done
      (loop $depths
        (br_if $done (i32.gt_s (local.get $d) (local.get $max)))
        (local.set $n (i32.shl (i32.const 1)
                               (i32.add (i32.sub (local.get $max) (local.get $d)) (i32.const 4))))
        (local.set $i (i32.const 0))
        (block $inner_done
          (loop $inner
            (br_if $inner_done (i32.ge_s (local.get $i) (local.get $n)))
            (local.set $total (i32.add (local.get $total)
                                       (call $check (call $make (local.get $d)))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $inner)))
        (local.set $d (i32.add (local.get $d) (i32.const 2)))
        (br $depths)))
    (i32.add (local.get $total) (call $check (local.get $long))))
)
