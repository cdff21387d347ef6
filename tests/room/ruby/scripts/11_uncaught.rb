def inner
  raise "boom from inner"
end
puts "start"
inner
