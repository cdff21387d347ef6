nums = $stdin.read.split.map(&:to_i)
puts "count=#{nums.size} sum=#{nums.sum} max=#{nums.max}"
