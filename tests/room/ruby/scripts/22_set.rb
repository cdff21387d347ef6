require 'set'
s = Set.new([3, 1, 2, 3])
puts s.size, s.include?(2)
s << 10
puts s.to_a.sort.inspect
puts (Set[1, 2] | Set[2, 3]).to_a.sort.inspect
puts (Set[1, 2, 3] & Set[2, 3, 4]).to_a.sort.inspect
puts Set[1, 2].subset?(Set[1, 2, 3])
