puts 2**200
puts (1..30).inject(:*)
puts 12345.digits.inspect
puts 48.gcd(180), 4.lcm(6)
puts Rational(3, 4) + Rational(1, 6)
puts 10.divmod(3).inspect, (-7) / 2, (-7) % 3
puts 1.0 / 3, 2.5.round, 3.5.round, 1e20.to_i
puts format("%.10f", Math::PI), Math.sqrt(2).round(6)
puts Integer.sqrt(10**20 + 1)
puts 255.to_s(2), "ff".to_i(16), 0b1010 | 0x0f
puts (2**64).bit_length, 7.fdiv(2)
puts Complex(1, 2) * Complex(3, 4)
