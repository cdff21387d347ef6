def twice
  yield 1
  yield 2
end
twice { |x| puts x * 10 }
add = ->(a, b) { a + b }
puts add.(2, 3), add.curry[1][2]
counter = 0
inc = proc { counter += 1 }
3.times(&inc)
puts counter
compose = method(:Integer) >> ->(n) { n * 2 }
puts compose.call("21")
make_adder = ->(n) { ->(x) { x + n } }
puts [1, 2, 3].map(&make_adder.(100)).inspect
puts %w[a b c].each_with_index.map { |c, i| c * (i + 1) }.join
def kw(a, b = 2, *rest, key:, opt: "o", **others, &blk)
  [a, b, rest, key, opt, others.keys, blk&.call].inspect
end
puts kw(1, key: :k)
puts kw(1, 3, 4, 5, key: 1, z: 2) { "blk" }
