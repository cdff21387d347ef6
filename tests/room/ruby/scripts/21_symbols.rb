list = %i[c a b]
puts list.sort.inspect
puts %w[one two three].map(&:length).inspect
puts :abc <=> :abd, :x.to_s + "y"
s = "mutable".dup
s << "!"
puts s
puts "frozen".frozen?
h = {a: 1, b: 2}
puts h.map { |k, v| "#{k}->#{v}" }.join(","), h.sum { _2 }
puts h.to_a.transpose.inspect
puts [:a, "a", 1, nil, 1.0].map { _1.class }.join(" ")
case [1, [2, 3]]
in [Integer => a, [b, *c]]
  puts "matched #{a} #{b} #{c}"
end
config = {db: {user: "admin", port: 5432}}
if config in {db: {port: Integer => port}}
  puts "port #{port}"
end
