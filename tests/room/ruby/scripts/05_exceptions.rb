class AppError < StandardError
  def initialize(msg = "app failed") = super
end
begin
  raise AppError
rescue AppError => e
  puts "caught #{e.class}: #{e.message}"
end
attempts = 0
begin
  attempts += 1
  raise "flaky" if attempts < 3
  puts "ok after #{attempts}"
rescue
  retry
end
def risky
  yield
rescue ZeroDivisionError => e
  puts "div: #{e.message}"
  :rescued
else
  :fine
ensure
  puts "ensure runs"
end
p risky { 1 / 0 }
p risky { 1 }
begin
  Integer("zz")
rescue ArgumentError => e
  puts e.class
end
x = begin
  raise TypeError, "t"
rescue TypeError, ArgumentError => e
  e.message * 2
end
puts x
puts [1, 2].fetch(5) { |i| "no #{i}" }
