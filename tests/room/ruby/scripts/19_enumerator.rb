fib = Enumerator.new do |y|
  a, b = 0, 1
  loop { y << a; a, b = b, a + b }
end
puts fib.take(15).join(" ")
e = [10, 20, 30].each
puts e.next, e.next, e.next
begin
  e.next
rescue StopIteration
  puts "stop"
end
gen = (1..3).each_with_index
puts gen.to_a.inspect
f = Fiber.new do
  x = Fiber.yield 1
  Fiber.yield x + 1
  :done
end
puts f.resume, f.resume(10), f.resume
