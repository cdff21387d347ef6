r = (1..10)
puts r.each_slice(3).map(&:sum).inspect
puts r.each_cons(4).count
puts r.select(&:even?).inspect, r.reject(&:even?).sum
puts r.inject(:*)
evens, odds = r.partition(&:even?)
puts evens.zip(odds).map { |a, b| a * b }.inspect
puts (1..Float::INFINITY).lazy.map { _1 * 3 }.select(&:odd?).first(4).inspect
puts %w[a b a c b a].tally.sort.map { |k, v| "#{k}#{v}" }.join
puts r.group_by { _1 % 3 }.sort.map { |k, v| "#{k}:#{v.size}" }.join(" ")
puts [3, 1, 2].each_with_object([]) { |x, acc| acc.unshift(x) }.inspect
puts r.sum { _1 ** 2 }, r.min(2).inspect, r.find { _1 > 4 }
puts [[1, 2], [3, 4]].to_h { |a, b| [a, b * 2] }.values.inspect
puts r.step(3).to_a.inspect, 10.downto(7).to_a.inspect
